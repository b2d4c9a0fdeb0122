// What push, pull and sync report while they run, for the CLI's bar and --json events.

export interface TransferProgress {
  readonly phase: 'scanning' | 'sending' | 'receiving' | 'publishing';
  /** Payload bytes moved (or hashed, while scanning) so far. */
  readonly bytes: number;
  /**
   * The bytes the phase moves in all, 0 while not known: a scan hashes as it walks; a push
   * knows what the receiver lacks once its Want is in (all distinct chunks till then), a pull
   * once it has looked for the chunks it holds.
   */
  readonly totalBytes: number;
  readonly files: number;
  readonly totalFiles: number;
}

/** A phase's running byte and file counts, reported on every change (push, pull, sync content). */
export class ProgressCounter {
  bytes = 0;
  files = 0;
  readonly #report: (p: TransferProgress) => void;
  readonly #phase: TransferProgress['phase'];
  #totalBytes: number;
  readonly #totalFiles: number;

  constructor(
    report: (p: TransferProgress) => void,
    phase: TransferProgress['phase'],
    totalBytes: number,
    totalFiles: number,
  ) {
    this.#report = report;
    this.#phase = phase;
    this.#totalBytes = totalBytes;
    this.#totalFiles = totalFiles;
  }

  addBytes(n: number): void {
    this.bytes += n;
    this.#tell();
  }

  setFiles(n: number): void {
    this.files = n;
    this.#tell();
  }

  /** The bytes the phase will move, once known (0: not known). */
  setTotalBytes(n: number): void {
    this.#totalBytes = n;
    this.#tell();
  }

  #tell(): void {
    this.#report({
      phase: this.#phase,
      bytes: this.bytes,
      totalBytes: this.#totalBytes,
      files: this.files,
      totalFiles: this.#totalFiles,
    });
  }
}

/**
 * Progress of transfers run one after another and reported as one (`pull A B LOCAL`): each
 * transfer's counts go on top of what those before it moved, so a bar and the --json events
 * keep counting up instead of starting over at each remote path.
 */
export class SequentialProgress {
  readonly #report: (p: TransferProgress) => void;
  #bytesBefore = 0;
  #filesBefore = 0;
  #last: TransferProgress | undefined;

  constructor(report: (p: TransferProgress) => void) {
    this.#report = report;
  }

  /** The progress callback of the next transfer; the one before it counts as finished. */
  next(): (p: TransferProgress) => void {
    const last = this.#last;
    if (last !== undefined) {
      // A finished transfer moved all it announced (a pull's byte total is not known ahead: 0).
      this.#bytesBefore += Math.max(last.bytes, last.totalBytes);
      this.#filesBefore += Math.max(last.files, last.totalFiles);
      this.#last = undefined;
    }
    const bytesBefore = this.#bytesBefore;
    const filesBefore = this.#filesBefore;
    return (p) => {
      this.#last = p;
      this.#report({
        phase: p.phase,
        bytes: bytesBefore + p.bytes,
        totalBytes: p.totalBytes === 0 ? 0 : bytesBefore + p.totalBytes,
        files: filesBefore + p.files,
        totalFiles: filesBefore + p.totalFiles,
      });
    };
  }
}

// What push, pull and sync report while they run, for the CLI's bar and --json events.

export interface TransferProgress {
  readonly phase: 'scanning' | 'sending' | 'receiving' | 'publishing';
  /** Payload bytes moved (or hashed, while scanning) so far. */
  readonly bytes: number;
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
  readonly #totalBytes: number;
  readonly #totalFiles: number;

  constructor(report: (p: TransferProgress) => void, phase: TransferProgress['phase'], totalBytes: number, totalFiles: number) {
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

  #tell(): void {
    this.#report({ phase: this.#phase, bytes: this.bytes, totalBytes: this.#totalBytes, files: this.files, totalFiles: this.#totalFiles });
  }
}

// What a transfer tells of many paths but lists only so many of: every one counted, the first
// `cap` kept (TransferDone's refused paths, a pull's unreadable entries).
export class CappedList<T> {
  readonly listed: T[] = [];
  count = 0;

  constructor(readonly cap: number) {}

  add(item: T): void {
    this.count++;
    if (this.listed.length < this.cap) this.listed.push(item);
  }
}

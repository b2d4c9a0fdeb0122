// A bounded async hand-off queue between a producer loop (a backend's accept loop or
// inbound-stream loop) and consumers (Listener.accept, Connection.acceptStream).
//
// Goals: a hard capacity (a peer that opens connections or streams faster than the node
// layer accepts them stalls the producer instead of growing memory), FIFO waiters, close()
// that wakes every waiter with null, AbortSignal support that rejects with ABORTED.
// Non-goals: priorities, fairness between producers, timeouts (callers pass a signal).
import { ClawpeerError } from '../errors.js';

interface Waiter<T> {
  resolve(value: T | null): void;
  reject(err: unknown): void;
}

export class BoundedQueue<T> {
  readonly #capacity: number;
  readonly #items: T[] = [];
  readonly #waiters: Waiter<T>[] = [];
  #roomWaiters: (() => void)[] = [];
  #closed = false;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`queue capacity must be a positive integer, got ${capacity}`);
    this.#capacity = capacity;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get size(): number {
    return this.#items.length;
  }

  /** Hands `item` to a waiting consumer or queues it. False when full or closed (caller disposes of it). */
  push(item: T): boolean {
    if (this.#closed) return false;
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) {
      waiter.resolve(item);
      return true;
    }
    if (this.#items.length >= this.#capacity) return false;
    this.#items.push(item);
    return true;
  }

  /** Resolves once push() would not fail for lack of room (or the queue is closed). */
  async waitForRoom(): Promise<void> {
    if (this.#closed || this.#items.length < this.#capacity) return;
    await new Promise<void>((resolve) => this.#roomWaiters.push(resolve));
  }

  /** The next item; null once the queue is closed and drained. Rejects with ABORTED on `signal`. */
  shift(signal?: AbortSignal): Promise<T | null> {
    if (this.#items.length > 0) {
      const item = this.#items.shift() as T;
      this.#wakeProducers();
      return Promise.resolve(item);
    }
    if (this.#closed) return Promise.resolve(null);
    if (signal?.aborted === true) return Promise.reject(abortError(signal));
    return new Promise<T | null>((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        reject(abortError(signal));
      };
      const waiter: Waiter<T> = {
        resolve: (v) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(v);
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
      this.#waiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Closes the queue: waiters get null, producers wake up. Returns items nobody took (to dispose of). */
  close(): T[] {
    if (this.#closed) return [];
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) w.resolve(null);
    this.#wakeProducers();
    return this.#items.splice(0);
  }

  #wakeProducers(): void {
    const wake = this.#roomWaiters;
    this.#roomWaiters = [];
    for (const w of wake) w();
  }
}

function abortError(signal: AbortSignal | undefined): ClawpeerError {
  return new ClawpeerError('ABORTED', 'wait aborted by its signal', { cause: signal?.reason });
}

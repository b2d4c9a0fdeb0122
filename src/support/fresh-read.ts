// One read shared by everyone who asks while it is pending, but never a read that began before
// they asked: each caller sees the state from after its call (a `pair remove` that completed
// before it asked is seen), and a flood of callers costs about one read at a time instead of
// one each (the listener asks the pair list and the invites about every inbound connection).
export function freshRead<T>(read: () => Promise<T>): () => Promise<T> {
  let current: Promise<T> | undefined;
  let queued: Promise<T> | undefined;
  const start = (): Promise<T> => {
    const p = Promise.resolve().then(read);
    current = p;
    const clear = (): void => {
      if (current === p) current = undefined;
    };
    p.then(clear, clear);
    return p;
  };
  return () => {
    if (current === undefined) return start();
    // The running read may have looked before this call: share the next one instead.
    queued ??= current
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        queued = undefined;
        return start();
      });
    return queued;
  };
}

/**
 * Every slot is taken and as many imports wait as may: refused now rather
 * than queued (each waiting one holds its body, up to 1 MiB, and everyone
 * behind it waited up to 5 s per hostile file before it).
 */
export class ImportsBusyError extends Error {
  override name = 'ImportsBusyError';
  constructor(
    /** True: the caller's own share is taken (theirs to wait for), not everyone's. */
    readonly own = false,
  ) {
    super(
      own
        ? 'you already have as many calendar imports under way as one user may; try again when they are done'
        : 'too many calendar imports are under way; try again in a few seconds',
    );
  }
}

/**
 * At most `limit` tasks at once; the others wait their turn in order. Each
 * iCalendar import runs in its own worker thread (up to 256 MiB of heap):
 * without a bound, a burst of 1 MiB uploads starts as many workers as there
 * are requests and exhausts the machine's memory.
 */
export class ImportSlots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  /** Tasks each owner has running or waiting. */
  private readonly byOwner = new Map<string, number>();

  constructor(
    private readonly limit: number,
    /** Tasks that may wait; one more is refused at once (ImportsBusyError). */
    private readonly maxWaiting = Infinity,
    /**
     * Tasks one owner may have running or waiting: one user's files cannot
     * take every slot and waiting place and refuse everyone else.
     */
    private readonly perOwner = Infinity,
  ) {}

  async run<T>(task: () => Promise<T>, owner?: string): Promise<T> {
    if (owner === undefined) return this.runInTurn(task);
    const held = this.byOwner.get(owner) ?? 0;
    if (held >= this.perOwner) throw new ImportsBusyError(true);
    this.byOwner.set(owner, held + 1);
    try {
      return await this.runInTurn(task);
    } finally {
      const left = (this.byOwner.get(owner) ?? 1) - 1;
      if (left > 0) this.byOwner.set(owner, left);
      else this.byOwner.delete(owner);
    }
  }

  private async runInTurn<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) {
      if (this.waiting.length >= this.maxWaiting) throw new ImportsBusyError();
      await new Promise<void>(resolve => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter; otherwise it is freed.
      if (next) next();
      else this.running--;
    }
  }
}

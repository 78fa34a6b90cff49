/**
 * Every slot is taken and as many imports wait as may: refused now rather
 * than queued (each waiting one holds its body, up to 1 MiB, and everyone
 * behind it waited up to 5 s per hostile file before it).
 */
export class ImportsBusyError extends Error {
  override name = 'ImportsBusyError';
  constructor() {
    super(
      'too many calendar imports are under way; try again in a few seconds',
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

  constructor(
    private readonly limit: number,
    /** Tasks that may wait; one more is refused at once (ImportsBusyError). */
    private readonly maxWaiting = Infinity,
  ) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
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

/**
 * At most `limit` tasks at once; the others wait their turn in order. Each
 * iCalendar import runs in its own worker thread (up to 256 MiB of heap):
 * without a bound, a burst of 1 MiB uploads starts as many workers as there
 * are requests and exhausts the machine's memory.
 */
export class ImportSlots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) {
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

import type {Logger} from '../logging/logger';
import type {InvalidRow} from './due-evaluator';

/** Warned-about rows are remembered up to this many, then forgotten at once. */
const REMEMBERED_LIMIT = 10_000;

/**
 * The producer's warnings about stored rows it cannot read (a scheduler's
 * expression, a calendar's entry): once per row and stored text, since the
 * same bad row comes back every minute and must not flood the log.
 */
export class RowWarnings {
  private readonly warned = new Set<string>();

  constructor(private readonly logger: Logger) {}

  calendarProblems(
    problems: Array<{calendarId: number; problems: string[]}>,
  ): void {
    for (const entry of problems) {
      if (
        !this.firstTime(
          `calendar:${entry.calendarId}:${entry.problems.join(';')}`,
        )
      ) {
        continue;
      }
      this.logger.warn('Calendar entry unreadable: left out', {
        calendar_id: entry.calendarId,
        problems: entry.problems,
      });
    }
  }

  invalidRows(invalid: InvalidRow[]): void {
    for (const entry of invalid) {
      if (
        !this.firstTime(`${entry.schedulerId}:${entry.field}:${entry.value}`)
      ) {
        continue;
      }
      this.logger.warn(`Scheduler skipped: unreadable ${entry.field}`, {
        scheduler_id: entry.schedulerId,
        field: entry.field,
        [entry.field]: entry.value,
        problems: entry.problems,
      });
    }
  }

  private firstTime(key: string): boolean {
    if (this.warned.has(key)) return false;
    if (this.warned.size >= REMEMBERED_LIMIT) this.warned.clear();
    this.warned.add(key);
    return true;
  }
}

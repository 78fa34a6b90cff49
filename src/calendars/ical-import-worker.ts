import {parentPort, workerData} from 'node:worker_threads';
import {importAllDayDates} from './ical-dates';

/**
 * Runs one import off the main thread (see ical-import-isolated.ts): the
 * parent kills this worker when a hostile rule keeps ical.js looping.
 */
interface ImportJob {
  text: string;
  nowMs: number;
  maxDates: number;
}

const job = workerData as ImportJob;
try {
  const result = importAllDayDates(job.text, new Date(job.nowMs), job.maxDates);
  parentPort!.postMessage({ok: true, result});
} catch (error) {
  const e = error as Error;
  parentPort!.postMessage({ok: false, name: e.name, message: e.message});
}

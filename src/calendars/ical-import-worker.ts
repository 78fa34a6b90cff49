import {parentPort, workerData} from 'node:worker_threads';
import {importAllDayDates} from './ical-dates';
import type {ImportJob} from './ical-import-isolated';

/**
 * Runs one import off the main thread (see ical-import-isolated.ts): the
 * parent kills this worker when a hostile rule keeps ical.js looping.
 * It says when its modules are loaded: the parse's time budget starts
 * there, so a thread slow to start on a busy machine is not taken for a
 * file too slow to expand.
 */
parentPort!.postMessage({started: true});
const job = workerData as ImportJob;
try {
  const result = importAllDayDates(job.text, new Date(job.nowMs), job.maxDates);
  parentPort!.postMessage({ok: true, result});
} catch (error) {
  const e = error as Error;
  parentPort!.postMessage({ok: false, name: e.name, message: e.message});
}

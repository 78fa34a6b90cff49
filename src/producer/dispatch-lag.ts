import type {Metrics} from '../metrics/metrics';
import type {ConfirmedListener} from './claim-publisher';

/**
 * Records slot → confirm (real time, seconds) for each confirmed run: the
 * dispatch-lag histogram. Nothing without metrics.
 */
export function dispatchLagRecorder(
  metrics: Metrics | undefined,
  trigger: 'cron' | 'sweep',
): ConfirmedListener | undefined {
  // The labelled child once per batch: no label hashing per run.
  const histogram = metrics?.get('dispatchLag')?.labels({trigger});
  if (!histogram) return undefined;
  return (claims, confirmed) => {
    for (const claim of claims) {
      const at = confirmed.get(claim.execution_id);
      if (at === undefined) continue;
      const lag = (at.getTime() - new Date(claim.slot).getTime()) / 1000;
      histogram.observe(Math.max(0, lag));
    }
  };
}

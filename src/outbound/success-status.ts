/** Default `success_status` of an HTTP target: any 2xx. */
export const DEFAULT_SUCCESS_STATUS = '200-299';

/** Codes and ranges, comma-separated: `200-299`, `200,202,204`. */
export const SUCCESS_STATUS_PATTERN =
  '^[1-5][0-9]{2}(-[1-5][0-9]{2})?(,[1-5][0-9]{2}(-[1-5][0-9]{2})?)*$';

/** True when `status` is one `spec` lists. 3xx never counts: redirects are not followed. */
export function isSuccessStatus(status: number, spec: string): boolean {
  if (status >= 300 && status < 400) return false;
  return spec.split(',').some(part => {
    const [low, high = low] = part.split('-').map(Number);
    return status >= low && status <= high;
  });
}

/** Problems of a spec the pattern accepts but that makes no sense (a range running backwards). */
export function successStatusProblems(spec: string): string[] {
  if (!new RegExp(SUCCESS_STATUS_PATTERN).test(spec)) {
    return [
      'success_status lists codes or ranges, comma-separated, e.g. 200-299 or 200,204',
    ];
  }
  return spec
    .split(',')
    .filter(part => {
      const [low, high = low] = part.split('-').map(Number);
      return high < low;
    })
    .map(part => `success_status range ${part} runs backwards`);
}

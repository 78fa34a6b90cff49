import {isatty} from 'node:tty';
import debug from 'debug';

interface DebugOptions {
  inspectOpts?: Record<string, unknown>;
}

/**
 * `debug` (LoopBack's `DEBUG=loopback:*` output) asks the kernel whether
 * stderr is a terminal every time a debug function is made, and LoopBack
 * makes two for every request (its request and invocation contexts): a
 * system call per request, about 3 % of a by-id read's CPU in the API
 * profile, for an answer that does not change while the process runs. It is
 * asked once here and kept, as `DEBUG_COLORS` would keep it; a given
 * `DEBUG_COLORS` is left as it is.
 */
export function settleDebugColours(
  options = (debug as unknown as DebugOptions).inspectOpts,
  stderrIsATerminal = () => isatty(process.stderr.fd),
): void {
  if (options && !('colors' in options)) options.colors = stderrIsATerminal();
}

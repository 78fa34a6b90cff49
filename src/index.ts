import {AppConfig, loadConfig} from './config';
import {applyProcessPriority} from './process/process-priority';
import {startupErrorLine} from './process/startup-error';

export type * from './application';
export type {main} from './process/main';

/**
 * `node dist/index.js`: the settings are read and checked before the
 * application loads (about 1,100 modules: over a second on an idle machine,
 * several on a busy one), so a wrong setting stops the process at once with
 * its one line, and only a process that can run pays for the load.
 */
if (require.main === module) {
  let config: AppConfig | undefined;
  try {
    config = loadConfig();
    // Before the load: the threads the application starts inherit it.
    applyProcessPriority(config.processNice);
  } catch (error) {
    process.stderr.write(startupErrorLine(error, config?.serviceName));
    process.exit(1);
  }
  import('./process/main')
    .then(({main}) => main(config))
    .catch(error => {
      process.stderr.write(startupErrorLine(error, config.serviceName));
      process.exit(1);
    });
}

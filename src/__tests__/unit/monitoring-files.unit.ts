import {expect} from '@loopback/testlab';
import {parser} from '@prometheus-io/lezer-promql';
import yaml from 'js-yaml';
import {execFileSync} from 'node:child_process';
import {readFileSync} from 'node:fs';
import path from 'node:path';
import {PROJECT_ROOT} from '../../config';
import {Metrics} from '../../metrics/metrics';

const DIR = path.join(PROJECT_ROOT, 'deploy/monitoring');
const PROMTOOL = '/usr/bin/promtool';

/** Runs promtool in deploy/monitoring; its output when it fails. */
function promtool(args: string[]): string {
  try {
    execFileSync(PROMTOOL, args, {cwd: DIR, stdio: 'pipe'});
    return '';
  } catch (error) {
    const {stdout, stderr} = error as {stdout?: Buffer; stderr?: Buffer};
    return `promtool ${args.join(' ')} failed:\n${stdout}${stderr}`;
  }
}

/** Grafana's interval variables, replaced by a duration before parsing. */
const withoutGrafanaVariables = (expr: string) =>
  expr.replace(/\$__(rate_)?interval/g, '5m');

/**
 * Parses `expr` with Prometheus's own PromQL grammar: its syntax errors and
 * the metric names its selectors use.
 */
export function promqlMetricNames(expr: string): {
  errors: string[];
  names: string[];
} {
  const source = withoutGrafanaVariables(expr);
  const errors: string[] = [];
  const names = new Set<string>();
  const cursor = parser.parse(source).cursor();
  do {
    if (cursor.type.isError) {
      errors.push(`syntax error at ${cursor.from} in ${expr}`);
    }
    if (cursor.name === 'Identifier') {
      const parent = cursor.node.parent;
      if (parent?.name === 'VectorSelector') {
        names.add(source.slice(cursor.from, cursor.to));
      }
    }
  } while (cursor.next());
  return {errors, names: [...names]};
}

/** Every series name the service's own /metrics shows, all roles at once. */
async function exportedNames(): Promise<Set<string>> {
  const metrics = new Metrics(
    new Set(['producer', 'consumer', 'api', 'stay_alive'] as const),
    {version: 'test'},
  );
  // Series that appear once something happens (a request, a scrape-time
  // read of the queues), so every name shows.
  metrics.observe('httpDuration', {method: 'GET', route: '/x', code: '200'}, 1);
  metrics.set('queueMessages', {queue: 'cron_scheduler'}, 0);
  metrics.set('queueConsumers', {queue: 'cron_scheduler'}, 0);
  const text = await metrics.registry.metrics();
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)[{ ]/.exec(line);
    if (match) names.add(match[1]);
  }
  return names;
}

/**
 * The anchors GitHub (and remark-validate-links) give a Markdown file's
 * headings: lower case, punctuation dropped, spaces as hyphens.
 */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const [, heading] of markdown.matchAll(/^#{1,6} +(.+?) *$/gm)) {
    anchors.add(
      heading
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/ /g, '-'),
    );
  }
  return anchors;
}

interface Rule {
  alert: string;
  expr: string;
  annotations: Record<string, string>;
}

const rules = (
  yaml.load(readFileSync(path.join(DIR, 'alerts.yml'), 'utf8')) as {
    groups: Array<{rules: Rule[]}>;
  }
).groups.flatMap(group => group.rules);

interface Panel {
  id: number;
  title: string;
  targets?: Array<{expr: string}>;
}
const dashboard = JSON.parse(
  readFileSync(
    path.join(DIR, 'grafana/dashboards/task-scheduler.json'),
    'utf8',
  ),
) as {uid: string; title: string; panels: Panel[]};

const dashboardQueries = dashboard.panels.flatMap(panel =>
  (panel.targets ?? []).map(target => ({
    panel: panel.title,
    expr: target.expr,
  })),
);

describe('monitoring files (deploy/monitoring, issue 16)', () => {
  it('has rules that promtool checks and whose unit tests pass', () => {
    expect(promtool(['check', 'rules', 'alerts.yml'])).to.equal('');
    expect(promtool(['test', 'rules', 'alerts.test.yml'])).to.equal('');
  });

  it('has a Prometheus configuration of valid syntax', () => {
    // --syntax-only: the rule file path is the container's, not ours.
    expect(
      promtool(['check', 'config', '--syntax-only', 'prometheus.yml']),
    ).to.equal('');
  });

  it('alerts on the seven conditions, each with a severity and a runbook', () => {
    expect(rules.map(rule => rule.alert).sort()).to.deepEqual(
      [
        'DispatchLagHigh',
        'NoConsumerOnTaskQueue',
        'PermanentFailuresRising',
        'ProducerNotTicking',
        'QueueGrowing',
        'RunsLostByBroker',
        'StayAliveRestartLoop',
      ].sort(),
    );
    for (const rule of rules) {
      expect(rule.annotations.runbook_url).to.match(
        /^docs\/operations\.md#[a-z-]+$/,
      );
    }
  });

  it('points every runbook_url at a section of docs/operations.md', () => {
    const anchors = headingAnchors(
      readFileSync(path.join(PROJECT_ROOT, 'docs/operations.md'), 'utf8'),
    );
    expect(anchors.size).to.be.above(rules.length);
    const missing = rules
      .map(rule => rule.annotations.runbook_url.split('#')[1])
      .filter(anchor => !anchors.has(anchor));
    expect(missing).to.deepEqual([]);
    // The check can fail: a misspelt anchor is not among them.
    expect(anchors.has('producer-not-tickin')).to.be.false();
  });

  it('names only metrics the service exports, in rules and dashboard alike', async () => {
    const exported = await exportedNames();
    const queries = [
      ...rules.map(rule => ({panel: `rule ${rule.alert}`, expr: rule.expr})),
      ...dashboardQueries,
    ];
    expect(queries.length).to.be.above(20);
    const problems = queries.flatMap(({panel, expr}) => {
      const {errors, names} = promqlMetricNames(expr);
      expect({panel, used: names.length > 0}).to.deepEqual({
        panel,
        used: true,
      });
      return [
        ...errors.map(error => `${panel}: ${error}`),
        ...names
          .filter(name => !exported.has(name))
          .map(name => `${panel}: unknown metric ${name}`),
      ];
    });
    expect(problems).to.deepEqual([]);
  });

  it('would notice a misspelt metric and a broken query (the check can fail)', async () => {
    const exported = await exportedNames();
    const misspelt = promqlMetricNames(
      'rate(task_scheduler_claim_total[$__rate_interval])',
    );
    expect(misspelt.errors).to.deepEqual([]);
    expect(misspelt.names.filter(name => !exported.has(name))).to.deepEqual([
      'task_scheduler_claim_total',
    ]);
    expect(promqlMetricNames('sum(rate(x[5m]) by').errors).to.not.be.empty();
  });

  it('has a dashboard with a uid and unique panel ids', () => {
    expect(dashboard.uid).to.equal('task-scheduler');
    const ids = dashboard.panels.map(panel => panel.id);
    expect(new Set(ids).size).to.equal(ids.length);
  });
});

import {ChildProcess, spawn} from 'node:child_process';
import {createWriteStream, readFileSync, WriteStream} from 'node:fs';
import path from 'node:path';
import type {TcpProxy} from '../fixtures/tcp-proxy';

const ENTRY = path.resolve(__dirname, '../../index.js');
const TAIL_LINES = 60;

/**
 * What package.json's start:worker passes to node: a smaller young
 * generation keeps a consumer that drains a flood of worker output under
 * 300 MB on Node 24 (see BENCHMARKS.md, worker output).
 */
const WORKER_NODE_FLAGS = ['--max-semi-space-size=8'];

export interface ExitRecord {
  at: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Why it ended: killed by the suite, its own fault point, or unexpected. */
  cause: 'suite-kill' | 'fault-point' | 'unexpected' | 'stop';
  tail: string[];
}

export interface ProcessLinks {
  database: TcpProxy;
  broker: TcpProxy;
}

/**
 * One service process (`node dist/index.js`) the suite keeps running, as a
 * container restart policy would: whenever it dies it is started again after
 * `restartDelayMs`. Its database and broker traffic goes through its own
 * proxies. Output goes to a log file; the last lines stay in memory.
 */
export class SupervisedProcess {
  child?: ChildProcess;
  starts = 0;
  readonly exits: ExitRecord[] = [];
  /** Real time of the last log line with each message, per message. */
  readonly lastSeen = new Map<string, number>();
  /** How many log lines with each message, over every start. */
  readonly seenCount = new Map<string, number>();
  lastMsg = '';
  private tail: string[] = [];
  private killing = false;
  private stopping = false;
  private log?: WriteStream;
  private restartTimer?: NodeJS.Timeout;

  constructor(
    readonly name: string,
    /** Its own proxies, where the suite breaks its links (none in the fleet run). */
    readonly links: ProcessLinks | undefined,
    private readonly env: Record<string, string>,
    private readonly logFile: string,
    private readonly restartDelayMs: number,
    /** Tells a self-inflicted fault-point SIGKILL from an unexpected one. */
    private readonly claimFaultFired: () => boolean,
  ) {}

  get alive(): boolean {
    return (
      !!this.child && this.child.exitCode === null && !this.child.signalCode
    );
  }

  start(): void {
    this.log ??= createWriteStream(this.logFile, {flags: 'a'});
    this.starts++;
    // Consumers run with the Node flags of `npm run start:worker`.
    const flags = this.env.APP_MODE === 'worker' ? WORKER_NODE_FLAGS : [];
    const child = spawn(process.execPath, [...flags, ENTRY], {
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    let partial = '';
    const onData = (chunk: Buffer) => {
      this.log?.write(chunk);
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) this.onLine(line);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => this.onExit(code, signal));
  }

  /** SIGKILL, as a crash would; the supervisor restarts it. */
  kill(): void {
    if (!this.alive) return;
    this.killing = true;
    this.child!.kill('SIGKILL');
  }

  /** SIGTERM and wait; no restart. */
  async stop(): Promise<ExitRecord | undefined> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || !this.alive) return undefined;
    const exited = new Promise<void>(resolve => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
    return this.exits[this.exits.length - 1];
  }

  async close(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    if (this.alive) {
      const child = this.child!;
      const exited = new Promise<void>(resolve => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    await new Promise<void>(resolve =>
      this.log ? this.log.end(resolve) : resolve(),
    );
  }

  /**
   * True while a worker child of this process runs, read from Linux's
   * /proc/<pid>/task/<pid>/children: exact, where the log lines arrive late.
   */
  insideTask(): boolean {
    if (!this.alive) return false;
    const pid = this.child!.pid!;
    try {
      return (
        readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim() !== ''
      );
    } catch {
      return false;
    }
  }

  lines(): string[] {
    return [...this.tail];
  }

  private onLine(line: string): void {
    this.tail.push(line);
    if (this.tail.length > TAIL_LINES) this.tail.shift();
    const msg = /"msg":"([^"]*)"/.exec(line)?.[1];
    if (msg) {
      this.lastMsg = msg;
      this.lastSeen.set(msg, Date.now());
      this.seenCount.set(msg, (this.seenCount.get(msg) ?? 0) + 1);
    }
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    const cause: ExitRecord['cause'] = this.stopping
      ? 'stop'
      : this.killing
        ? 'suite-kill'
        : signal === 'SIGKILL' && this.claimFaultFired()
          ? 'fault-point'
          : 'unexpected';
    this.killing = false;
    this.exits.push({at: Date.now(), code, signal, cause, tail: this.lines()});
    this.lastMsg = '';
    if (this.stopping) return;
    this.restartTimer = setTimeout(() => {
      if (!this.stopping) this.start();
    }, this.restartDelayMs);
  }
}

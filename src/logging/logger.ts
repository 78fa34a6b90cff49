import {hostname} from 'node:os';
import {configure} from 'safe-stable-stringify';
import {MESSAGE} from 'triple-beam';
import winston from 'winston';
import type Transport from 'winston-transport';
import type {LogLevel} from '../config';
import {redactSecrets} from './redact';
import {currentRequestId} from './request-context';

export type Logger = winston.Logger;

export interface LoggerOptions {
  level: LogLevel;
  service: string;
  /** Defaults to one console transport writing to stdout. */
  transports?: Transport[];
}

const LEVELS: Record<LogLevel, number> = {error: 0, warn: 1, info: 2, debug: 3};
const HOSTNAME = hostname();
// Keep insertion order so the common fields lead every line.
const stringify = configure({deterministic: false});

/**
 * One JSON object per line with the spec's common fields first:
 * level, time, pid, hostname, service, msg, then context, request_id (of
 * the request the record was written for) and the rest.
 */
function jsonLine(service: string) {
  return winston.format(info => {
    const {level, message, context, ...rest} = info;
    // The request this record was written for (see request-context.ts).
    const requestId = rest.request_id ?? currentRequestId();
    delete rest.request_id;
    const record = {
      level,
      time: new Date().toISOString(),
      pid: process.pid,
      hostname: HOSTNAME,
      service,
      msg: message,
      ...(context === undefined ? {} : {context}),
      ...(requestId === undefined ? {} : {request_id: requestId}),
      ...(redactSecrets(rest) as object),
    };
    info[MESSAGE] = stringify(record);
    return info;
  })();
}

export function createLogger(options: LoggerOptions): Logger {
  return winston.createLogger({
    levels: LEVELS,
    level: options.level,
    format: jsonLine(options.service),
    transports: options.transports ?? [new winston.transports.Console()],
  });
}

/** A child logger whose records carry `context` naming the component. */
export function componentLogger(logger: Logger, context: string): Logger {
  return logger.child({context});
}

import {expect} from '@loopback/testlab';
import {hostname} from 'node:os';
import {componentLogger} from '../../logging/logger';
import {redactUrl} from '../../logging/redact';
import {LogCapture} from '../fixtures/log-capture';

describe('structured logger', () => {
  it('writes one JSON object per line, common fields first', () => {
    const capture = new LogCapture('info', 'svc');
    componentLogger(capture.logger, 'cron-scheduler').info('Tick done', {
      due: 3,
    });
    expect(capture.lines).to.have.length(1);
    const record = JSON.parse(capture.lines[0]);
    expect(Object.keys(record)).to.deepEqual([
      'level',
      'time',
      'pid',
      'hostname',
      'service',
      'msg',
      'context',
      'due',
    ]);
    expect(record).to.containDeep({
      level: 'info',
      pid: process.pid,
      hostname: hostname(),
      service: 'svc',
      msg: 'Tick done',
      context: 'cron-scheduler',
      due: 3,
    });
    expect(new Date(record.time).toISOString()).to.equal(record.time);
  });

  it('drops records below LOG_LEVEL', () => {
    const capture = new LogCapture('warn');
    capture.logger.debug('d');
    capture.logger.info('i');
    capture.logger.warn('w');
    capture.logger.error('e');
    expect(capture.records.map(r => r.level)).to.deepEqual(['warn', 'error']);
  });

  it('masks secret-looking fields at any depth', () => {
    const capture = new LogCapture();
    capture.logger.info('login', {
      email: 'a@b.c',
      password: 'hunter2',
      headers: {Authorization: 'Bearer abc.def.ghi'},
      nested: [{api_key: 'k-123'}],
    });
    const line = capture.lines[0];
    expect(line).to.not.match(/hunter2|abc\.def\.ghi|k-123/);
    expect(JSON.parse(line).email).to.equal('a@b.c');
  });

  it('masks secret query parameters in URLs', () => {
    expect(redactUrl('/api/x?access_token=abc&page=2')).to.equal(
      '/api/x?access_token=%5BREDACTED%5D&page=2',
    );
    expect(redactUrl('/api/x?page=2')).to.equal('/api/x?page=2');
  });
});

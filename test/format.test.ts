// Human output of the CLI: aligned tables, short durations, Web UI links.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { duration, table, workflowUrl } from '../client/format.ts';

describe('format', () => {
  it('format: table aligns every column to its widest cell under an upper-case header', () => {
    const text = table(
      [
        { id: 'a', source: 'demo', status: 'succeeded' },
        { id: 'bbbbbb', source: 'acme-eu', status: 'running' },
      ],
      ['id', 'source', 'status'],
    );
    assert.equal(
      text,
      ['ID      SOURCE   STATUS', 'a       demo     succeeded', 'bbbbbb  acme-eu  running'].join('\n'),
    );
  });

  it('format: table picks and orders columns, leaves missing cells blank and no trailing spaces', () => {
    const text = table([{ b: 'x', a: '1', extra: 'ignored' }, { a: '22' }], ['a', 'b']);
    assert.equal(text, ['A   B', '1   x', '22'].join('\n'));
    assert.ok(!text.includes('ignored'));
    assert.ok(text.split('\n').every((line) => line === line.trimEnd()));
  });

  it('format: table of no rows is just the header', () => {
    assert.equal(table([], ['id', 'status']), 'ID  STATUS');
  });

  it('format: duration shows tenths of seconds under a minute, then m ss, then h mm', () => {
    assert.equal(duration(0), '0.0s');
    assert.equal(duration(1_234), '1.2s');
    assert.equal(duration(59_900), '59.9s');
    assert.equal(duration(60_000), '1m 00s');
    assert.equal(duration(184_000), '3m 04s');
    assert.equal(duration(3_599_000), '59m 59s');
    assert.equal(duration(3_600_000), '1h 00m');
    assert.equal(duration(7_500_000), '2h 05m');
    assert.equal(duration(90_000_000), '25h 00m');
  });

  it('format: workflowUrl encodes the slashes of workflow ids so the link names one workflow', () => {
    assert.equal(
      workflowUrl('http://localhost:8233', 'default', 'fetch/fetch-records/demo/2026-03-14'),
      'http://localhost:8233/namespaces/default/workflows/fetch%2Ffetch-records%2Fdemo%2F2026-03-14',
    );
  });

  it('format: workflowUrl drops a trailing slash of the base, encodes the namespace and links a run history', () => {
    assert.equal(
      workflowUrl('https://ui.example/', 'team a', 'fetch/fetch-records/demo/2026-03-14', 'r-1/2'),
      'https://ui.example/namespaces/team%20a/workflows/fetch%2Ffetch-records%2Fdemo%2F2026-03-14/r-1%2F2/history',
    );
  });
});

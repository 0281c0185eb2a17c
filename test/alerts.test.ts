// The Prometheus alert rules (ops/alerts.yml): promtool checks them and runs their unit
// tests (ops/alerts.test.yml); every alert carries what an on-call person needs and has cases where
// it fires and where it does not; and the unit tests can fail: an alert that never fires, or that
// fires without waiting its `for`, makes them fail.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { resolvePromtool } from '../scripts/promtool.ts';
import { PROJECT_ROOT } from '../runtime/config.ts';

const RULES = path.join(PROJECT_ROOT, 'ops', 'alerts.yml');
const RULE_TESTS = path.join(PROJECT_ROOT, 'ops', 'alerts.test.yml');
const RUNBOOK_URL =
  /^https:\/\/github\.com\/durable-fetch\/durable-fetch\/blob\/main\/(docs\/[a-z-]+\.md)#(.+)$/;

interface Run {
  code: number;
  output: string;
}

function runPromtool(promtool: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(promtool, args, { timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

/** One rule of ops/alerts.yml, read by indentation (the project has no YAML library). */
interface Rule {
  name: string;
  kind: 'alert' | 'record';
  /** Single-line values of the rule's own keys (`for`, `expr` when on one line…). */
  keys: Map<string, string>;
  labels: Map<string, string>;
  annotations: Map<string, string>;
  /** Lines [first, last] holding the rule's `expr` (its key line and any block lines). */
  exprLines: [number, number];
  /** Line of the rule's `for:` key. */
  forLine: number;
  indent: number;
}

const indentOf = (line: string) => line.length - line.trimStart().length;
const unquote = (v: string) => v.trim().replace(/^'(.*)'$|^"(.*)"$/, '$1$2');
const isContent = (line: string) => line.trim() !== '' && !line.trimStart().startsWith('#');

/**
 * The rules of a Prometheus rule file written the way ops/alerts.yml is: `- alert:`/`- record:`
 * items whose keys sit one level in, `labels`/`annotations` maps one level below those, values on
 * one line or in `|`/`>-` blocks. promtool has already validated the YAML itself.
 */
function parseRules(lines: string[]): Rule[] {
  const rules: Rule[] = [];
  for (let i = 0; i < lines.length; i++) {
    const item = /^(\s*)- (alert|record):\s*(\S+)\s*$/.exec(lines[i]!);
    if (!item) continue;
    const indent = item[1]!.length + 2;
    let end = i + 1;
    // The rule ends at the next line indented less than its keys (the next rule, group or end).
    while (end < lines.length && !(isContent(lines[end]!) && indentOf(lines[end]!) < indent)) end++;
    const rule: Rule = {
      name: item[3]!,
      kind: item[2] as Rule['kind'],
      keys: new Map(),
      labels: new Map(),
      annotations: new Map(),
      exprLines: [-1, -1],
      forLine: -1,
      indent,
    };
    for (let j = i + 1; j < end; j++) {
      const key = /^\s*([a-z_]+):\s*(.*)$/.exec(lines[j]!);
      if (!key || indentOf(lines[j]!) !== indent) continue;
      let last = j;
      while (last + 1 < end && (!isContent(lines[last + 1]!) || indentOf(lines[last + 1]!) > indent)) last++;
      const [name, value] = [key[1]!, key[2]!];
      rule.keys.set(name, unquote(value));
      if (name === 'expr') rule.exprLines = [j, last];
      if (name === 'for') rule.forLine = j;
      if (name === 'labels' || name === 'annotations') {
        const map = name === 'labels' ? rule.labels : rule.annotations;
        const children = lines.slice(j + 1, last + 1);
        const childIndent = Math.min(...children.filter(isContent).map(indentOf));
        children.forEach((line, k) => {
          const child = /^\s*([a-z_]+):\s*(.*)$/.exec(line);
          if (!child || indentOf(line) !== childIndent) return;
          let text = unquote(child[2]!);
          if (/^[|>][-+]?$/.test(text)) {
            const block: string[] = [];
            for (const more of children.slice(k + 1)) {
              if (isContent(more) && indentOf(more) <= childIndent) break;
              block.push(more.trim());
            }
            text = block.join(' ').trim();
          }
          map.set(child[1]!, text);
        });
      }
    }
    rules.push(rule);
  }
  return rules;
}

/** Per alert name, how many unit-test evaluations expect it to fire and how many expect nothing. */
function caseCounts(testLines: string[]): Map<string, { firing: number; quiet: number }> {
  const counts = new Map<string, { firing: number; quiet: number }>();
  const starts = testLines.flatMap((line, i) => (/^\s*- (eval_time|name|expr):/.test(line) ? [i] : []));
  starts.forEach((start, n) => {
    const chunk = testLines.slice(start, starts[n + 1] ?? testLines.length);
    if (!/^\s*- eval_time:/.test(chunk[0]!)) return;
    const name = chunk.map((l) => /^\s*alertname:\s*(\S+)\s*$/.exec(l)?.[1]).find(Boolean);
    const expIndex = chunk.findIndex((l) => /^\s*exp_alerts:/.test(l));
    assert.ok(name, `an alert_rule_test item without alertname: ${chunk[0]!.trim()}`);
    assert.ok(expIndex >= 0, `${name}: an alert_rule_test item without exp_alerts (write exp_alerts: [])`);
    const count = counts.get(name) ?? { firing: 0, quiet: 0 };
    if (/^\s*exp_alerts:\s*\[\]\s*$/.test(chunk[expIndex]!)) count.quiet++;
    else if (chunk.slice(expIndex + 1).some((l) => /^\s*- exp_labels:/.test(l))) count.firing++;
    counts.set(name, count);
  });
  return counts;
}

/** GitHub's anchor of a Markdown heading. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

void describe('alerts', () => {
  let promtool: string;
  let ruleLines: string[];
  let alerts: Rule[];
  let workDir: string;

  before(async () => {
    promtool = await resolvePromtool({ log: (line) => console.log(`[alerts.test] ${line}`) });
    ruleLines = (await readFile(RULES, 'utf8')).split('\n');
    alerts = parseRules(ruleLines).filter((r) => r.kind === 'alert');
    workDir = await mkdtemp(path.join(os.tmpdir(), 'df-alerts-'));
  });
  after(async () => {
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  /** Runs the unit tests against a changed copy of the rules (the tests' own file, untouched). */
  async function testRulesWith(lines: string[]): Promise<Run> {
    await writeFile(path.join(workDir, 'alerts.yml'), lines.join('\n'));
    await writeFile(path.join(workDir, 'alerts.test.yml'), await readFile(RULE_TESTS));
    return runPromtool(promtool, ['test', 'rules', path.join(workDir, 'alerts.test.yml')]);
  }

  void it('alerts: promtool check rules accepts ops/alerts.yml and counts every rule', async () => {
    const run = await runPromtool(promtool, ['check', 'rules', RULES]);
    assert.equal(run.code, 0, run.output);
    const found = /SUCCESS: (\d+) rules found/.exec(run.output);
    assert.ok(found, run.output);
    assert.equal(Number(found[1]), parseRules(ruleLines).length, run.output);
    assert.deepEqual(
      alerts.map((a) => a.name),
      [
        'DurableFetchBacklogAgeGrowing',
        'DurableFetchCompletionBelowArrival',
        'DurableFetchDeadLetterRatio',
        'DurableFetchOutboxLag',
        'DurableFetchCompensationsNeedManual',
        'DurableFetchCredentialNeedsReauthorization',
        'DurableFetchStrayEffects',
        'DurableFetchDownstreamFailing',
        'DurableFetchRunsStuck',
        'DurableFetchOrphanedActions',
        'DurableFetchBreakerOpen',
        'DurableFetchRetryBudgetExhausted',
        'DurableFetchDatabaseUnreachable',
        'DurableFetchTemporalUnreachable',
      ],
    );
  });

  void it('alerts: promtool test rules passes ops/alerts.test.yml', async () => {
    const run = await runPromtool(promtool, ['test', 'rules', RULE_TESTS]);
    assert.equal(run.code, 0, run.output);
    assert.match(run.output, /SUCCESS/);
  });

  void it('alerts: every alert has for, a severity, summary, description and runbook_url', () => {
    for (const alert of alerts) {
      assert.match(alert.keys.get('for') ?? '', /^\d+[smh]$/, `${alert.name}: for`);
      assert.match(alert.labels.get('severity') ?? '', /^(page|warning)$/, `${alert.name}: severity`);
      for (const key of ['summary', 'description']) {
        assert.ok((alert.annotations.get(key) ?? '').length > 10, `${alert.name}: annotation ${key}`);
      }
      assert.match(alert.annotations.get('runbook_url') ?? '', RUNBOOK_URL, `${alert.name}: runbook_url`);
      assert.ok(alert.exprLines[0] >= 0, `${alert.name}: expr`);
    }
  });

  void it('alerts: every runbook_url names a heading of the doc it points to', async () => {
    for (const alert of alerts) {
      const [, doc, anchor] = RUNBOOK_URL.exec(alert.annotations.get('runbook_url') ?? '') ?? [];
      assert.ok(doc && anchor, `${alert.name}: runbook_url`);
      const file = path.join(PROJECT_ROOT, doc);
      assert.ok(existsSync(file), `${alert.name}: its runbook_url points to ${doc}, which does not exist`);
      let fenced = false; // a `# comment` inside a code block is no heading
      const anchors = (await readFile(file, 'utf8')).split('\n').flatMap((line) => {
        if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
        const heading = fenced ? undefined : /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line)?.[1];
        return heading === undefined ? [] : [anchorOf(heading)];
      });
      assert.ok(anchors.includes(anchor), `${alert.name}: ${doc} has no heading for #${anchor}`);
    }
  });

  void it('alerts: every alert has unit-test cases where it fires and where it does not', async () => {
    const testLines = (await readFile(RULE_TESTS, 'utf8')).split('\n');
    assert.ok(
      testLines.some((l) => /^\s*- alerts\.yml\s*$/.test(l)),
      'alerts.test.yml must load alerts.yml (rule_files)',
    );
    const counts = caseCounts(testLines);
    const names = alerts.map((a) => a.name);
    for (const tested of counts.keys()) {
      // promtool accepts any alertname: a misspelt one would be a case that expects nothing of nothing.
      assert.ok(names.includes(tested), `alerts.test.yml tests ${tested}, which alerts.yml does not define`);
    }
    for (const name of names) {
      const count = counts.get(name) ?? { firing: 0, quiet: 0 };
      assert.ok(count.firing >= 1, `${name}: no case where it fires`);
      assert.ok(count.quiet >= 1, `${name}: no case where it does not fire`);
    }
  });

  void it('alerts: the unit tests fail when an alert never fires or does not wait its for', async () => {
    for (const alert of alerts) {
      const [first, last] = alert.exprLines;
      const pad = ' '.repeat(alert.indent);
      const neverFires = [
        ...ruleLines.slice(0, first),
        `${pad}expr: vector(0) > 1`,
        ...ruleLines.slice(last + 1),
      ];
      const run = await testRulesWith(neverFires);
      assert.notEqual(run.code, 0, `${alert.name}: tests still pass with an expression that never fires`);
      assert.match(run.output, new RegExp(`alertname: ${alert.name}\\b`), run.output);

      const noWait = ruleLines.map((line, i) => (i === alert.forLine ? `${pad}for: 0s` : line));
      const hasty = await testRulesWith(noWait);
      assert.notEqual(hasty.code, 0, `${alert.name}: tests still pass with for: 0s`);
      assert.match(hasty.output, new RegExp(`alertname: ${alert.name}\\b`), hasty.output);
    }
    // The unchanged copy passes, so the failures above come from the changes alone.
    assert.equal((await testRulesWith(ruleLines)).code, 0);
  });
});

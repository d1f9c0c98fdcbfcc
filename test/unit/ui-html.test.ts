import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { html, num, pager, status, time } from '../../src/ui/html.js';
import { redactUrl } from '../../src/ui/sources.js';

/** The dashboard's HTML pieces: escaped text, plain statuses, times, numbers, no password. */
describe('dashboard HTML', () => {
  test('text is escaped, markup is not', () => {
    const reason = '<script>alert("x")</script> & \'quoted\'';
    assert.equal(
      html`<td>${reason}</td>${html`<b>ok</b>`}`.text,
      '<td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quoted&#39;</td><b>ok</b>',
    );
  });

  test('a status is a word; a time is UTC in its text and title, ISO in datetime', () => {
    assert.match(status('failed').text, />failed</);
    assert.equal(
      time('2026-06-10T12:00:05.123Z').text,
      '<time datetime="2026-06-10T12:00:05.123Z" title="2026-06-10 12:00:05 UTC">2026-06-10 12:00:05 UTC</time>',
    );
    assert.equal(time(null).text, '-');
  });

  test('numbers have thousands separators, as the CLI prints them', () => {
    assert.equal(num(1234567), '1,234,567');
    assert.equal(num('2564'), '2,564');
    assert.equal(num(null), '-');
  });

  test('a pager links the pages before and after, and says where it is', () => {
    const text = pager('/runs', { status: 'failed' }, 1, 50, 120).text;
    assert.match(text, /href="\/runs\?status=failed&amp;page=0"/);
    assert.match(text, /href="\/runs\?status=failed&amp;page=2"/);
    assert.match(text, /51 to 100 of 120/);
  });

  test('a URL loses its password and secret query values', () => {
    assert.equal(
      redactUrl('postgresql://me:pa55@db.example:5432/x?sslmode=require&password=p2'),
      'postgresql://me:***@db.example:5432/x?sslmode=require&password=***',
    );
    assert.equal(redactUrl('sqlite:data/x.sqlite'), 'sqlite:data/x.sqlite');
  });
});

// Saves a screenshot of a page (a report.html, or a URL) with Debian's Chromium, headless,
// driven by puppeteer-core, for the docs (docs/report.md):
//
//   node web/test/screenshot.mjs out/openb/report.html docs/img/report-openb.png [WHAT]
//
// The page is given a second for its charts (drawn without animation) and shot at 1280 px
// wide: from the top, WHAT pixels tall (default 1400); whole with WHAT=full; or only the
// element a CSS selector names (WHAT starting with # or .; its figure when it is a canvas).
import puppeteer from 'puppeteer-core';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

const [page_arg, out, what = '1400'] = process.argv.slice(2);
const selector = /^[#.]/.test(what) ? what : null;
const height = selector ? '1000' : what;
if (!page_arg || !out) {
  console.error('usage: node web/test/screenshot.mjs PAGE_OR_URL OUT.png [HEIGHT|full|SELECTOR]');
  process.exit(2);
}
const url = /^[a-z]+:\/\//.test(page_arg) ? page_arg : pathToFileURL(resolve(page_arg)).href;
const browser = await puppeteer.launch({
  executablePath: process.env.TESSERA_CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
});
try {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.setViewport({ width: 1280, height: height === 'full' ? 1000 : Number(height) });
  await page.goto(url, { waitUntil: 'load' });
  await new Promise((r) => setTimeout(r, 1000));
  if (selector) {
    const element = await page.$(selector);
    if (!element) throw new Error('no element ' + selector + ' on ' + url);
    const target = (await element.evaluateHandle((el) => el.closest('figure') ?? el)).asElement();
    await target.screenshot({ path: out });
  } else {
    await page.screenshot({ path: out, fullPage: height === 'full' });
  }
  if (errors.length) {
    console.error('page errors: ' + errors.join('; '));
    process.exitCode = 1;
  }
} finally {
  await browser.close();
}

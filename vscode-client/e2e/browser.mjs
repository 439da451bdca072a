// The browser side of the end-to-end tests: Debian's chromium on code-server's page, and the
// few moves the drivers share. Arguments come as JSON in $FSR_E2E_CONFIG ({ url, artifacts, ... }).
import { chromium } from "playwright-core";
import { readFileSync } from "node:fs";

export const config = JSON.parse(readFileSync(process.env.FSR_E2E_CONFIG, "utf8"));
export const step = (name) => console.log(`step: ${name}`);

// Runs `steps(page, moves)` in a fresh browser; exit 1 (with a screenshot) at the first failure.
export async function drive(steps) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
  });
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const shot = (name) => page.screenshot({ path: `${config.artifacts}/${name}.png` });
  // Open the quick input with `keys`, type `text`, wait for a row showing it, take it.
  const pick = async (keys, text) => {
    await page.keyboard.press(keys);
    await page.locator(".quick-input-widget input").waitFor({ timeout: 30000 });
    await page.keyboard.type(text, { delay: 10 });
    await page.locator(".quick-input-list .monaco-list-row").filter({ hasText: text }).first().waitFor({ timeout: 30000 });
    await page.keyboard.press("Enter");
  };
  const command = (title) => pick("F1", title);
  const goToLine = async (line) => {
    await page.locator(".monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+G");
    await page.keyboard.type(String(line));
    await page.keyboard.press("Enter");
  };
  try {
    await page.goto(config.url, { waitUntil: "domcontentloaded" });
    await page.locator(".monaco-workbench").waitFor({ timeout: 120000 });
    step("workbench loaded");
    await steps(page, { shot, pick, command, goToLine });
  } catch (e) {
    console.log(`failed: ${e.message.split("\n")[0]}`);
    await shot("failure").catch(() => undefined);
    await browser.close();
    process.exit(1);
  }
  await browser.close();
}

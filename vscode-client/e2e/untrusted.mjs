// Drives code-server in a folder the user has not trusted (Restricted Mode), whose
// .vscode/settings.json names programs and an endpoint: nvcc's diagnostic still shows, Optimize
// and Capture are refused with a message; then the user trusts the folder, and Optimize runs.
// $FSR_E2E_CONFIG: { url, file, kernelLine, warning, artifacts }.
import { config, drive, step } from "./browser.mjs";

const notification = (page, text) =>
  page.locator(".notifications-toasts, .notifications-center").getByText(text, { exact: false }).first();

await drive(async (page, { shot, pick, command, goToLine }) => {
  await page.locator(".statusbar").getByText("Restricted Mode").first().waitFor({ timeout: 60000 });
  step("the folder is in Restricted Mode");

  await pick("Control+P", config.file);
  await page.locator(".monaco-editor .view-lines").first().waitFor({ timeout: 30000 });
  step("file opened");
  await command("Problems: Focus on Problems View");
  await page.locator(".markers-panel").getByText(config.warning, { exact: false }).first().waitFor({ timeout: 120000 });
  step("nvcc diagnostic in the Problems view");
  await shot("untrusted-diagnostics");

  await goToLine(config.kernelLine);
  await command("FSR: Optimize kernel at cursor");
  await notification(page, "Optimize is off in Restricted Mode").waitFor({ timeout: 30000 });
  step("optimize refused");
  await page.waitForTimeout(500);  // the toast slides in
  await shot("untrusted-optimize-refused");
  await command("FSR: Capture launches from a run");
  await notification(page, "Capture is off in Restricted Mode").waitFor({ timeout: 30000 });
  step("capture refused");

  await command("Workspaces: Manage Workspace Trust");
  await page.getByRole("button", { name: "Trust", exact: true }).first().click({ timeout: 30000 });
  await page.locator(".statusbar").getByText("Restricted Mode").first().waitFor({ state: "detached", timeout: 30000 });
  step("folder trusted");
  await command("View: Close Editor");  // the Workspace Trust editor
  // The server restarts, told the folder is trusted: ask until a search starts and reports.
  const win = page.locator(".markers-panel").getByText("FSR:", { exact: false }).first();
  for (let attempt = 0; ; attempt++) {
    await pick("Control+P", config.file);
    await goToLine(config.kernelLine);
    await command("FSR: Optimize kernel at cursor");
    await command("Problems: Focus on Problems View");
    try {
      await win.waitFor({ timeout: 30000 });
      break;
    } catch (e) {
      if (attempt === 3) throw e;
    }
  }
  step("trusted: optimize ran and reported its win");
  await shot("trusted-win");
});

// Drives code-server (a real VS Code) in Debian's chromium: open a .cu file, see nvcc's
// diagnostic in the Problems view, run "FSR: Optimize kernel at cursor", accept the rewrite
// in the refactor preview, save. Arguments come as JSON in $FSR_E2E_CONFIG:
//   { url, file, kernelLine, warning, artifacts }
// Each step is logged; screenshots go to `artifacts`. Exit 0 only if every step passed.
import { config, drive, step } from "./browser.mjs";

await drive(async (page, { shot, pick, command, goToLine }) => {
  await pick("Control+P", config.file);
  await page.locator(".monaco-editor .view-lines").first().waitFor({ timeout: 30000 });
  step("file opened");

  await command("Problems: Focus on Problems View");
  await page.locator(".markers-panel").getByText(config.warning, { exact: false }).first().waitFor({ timeout: 120000 });
  step("nvcc diagnostic in the Problems view");
  await shot("diagnostics");

  await goToLine(config.kernelLine);
  await command("FSR: Optimize kernel at cursor");
  step("optimize requested");
  await page.locator(".markers-panel").getByText("FSR:", { exact: false }).first().waitFor({ timeout: 180000 });
  step("verified win reported");
  await shot("win");

  await goToLine(config.kernelLine);
  await page.keyboard.press("Control+.");
  const apply = page.getByText(/^Apply FSR rewrite/).first();
  await apply.waitFor({ timeout: 30000 });
  // The action list takes the keyboard (its rows ignore synthetic clicks): the win is listed
  // first, under "Rewrite", and focused.
  await page.keyboard.press("Enter");
  step("apply chosen");
  const confirm = page.getByRole("button", { name: "Apply", exact: true });
  await confirm.first().waitFor({ timeout: 30000 });
  // The edit needs confirmation (a change annotation): VS Code lists it unticked, as a user
  // sees it; tick the file, then apply.
  const row = page.locator(".part.panel .monaco-list-row").filter({ hasText: config.file }).first();
  await row.waitFor({ timeout: 30000 });
  const box = row.locator('input[type="checkbox"], [role="checkbox"], .monaco-custom-toggle').first();
  await box.waitFor({ timeout: 30000 });
  await box.click();
  await shot("refactor-preview");
  await confirm.first().click();
  step("refactor preview applied");
  await command("File: Save");
  await page.waitForTimeout(1500);
  step("saved");
  await shot("after");
});

// ESLint for the JavaScript the host ships: the page's modules, the sandbox proxy's script, and the
// scripts put into views (host/process/*.js, the demo views' bridge). tests/code runs it.
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    files: ["src/mcp_apps_host/web/static/*.js"],
    languageOptions: { ecmaVersion: 2024, sourceType: "module", globals: globals.browser },
  },
  {
    // Classic scripts, each inlined into its own document.
    files: ["src/mcp_apps_host/web/static/sandbox.js", "src/mcp_apps_host/host/process/*.js", "src/mcp_apps_host/demo/*.js"],
    languageOptions: { ecmaVersion: 2024, sourceType: "script", globals: globals.browser },
  },
];

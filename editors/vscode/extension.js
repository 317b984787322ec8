// The rbg extension: the grammar and language configuration are declared in
// package.json; this file starts the language server (`rbg lsp`) and restarts
// it when its settings change. Plain JavaScript, so there is no build step.
"use strict";

const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client = null;

function serverOptions() {
  const config = vscode.workspace.getConfiguration("rbg.server");
  // No `transport`: the client then talks over stdio without appending
  // `--stdio` to the arguments, so the command runs exactly as configured.
  return {
    command: config.get("path", "rbg"),
    args: config.get("args", ["lsp"]),
  };
}

async function start() {
  if (!vscode.workspace.getConfiguration("rbg.server").get("enabled", true)) {
    return;
  }
  const options = serverOptions();
  client = new LanguageClient("rbg", "rbg language server", options, {
    documentSelector: [
      { scheme: "file", language: "rbg" },
      { scheme: "untitled", language: "rbg" },
    ],
  });
  try {
    await client.start();
  } catch (err) {
    client = null;
    const message =
      `rbg: could not start the language server with \`${options.command} ${options.args.join(" ")}\`: ${err.message || err}. ` +
      "Install it with `pip install 'rubriclang[lsp]'` and set `rbg.server.path` to its `rbg` command.";
    vscode.window.showErrorMessage(message, "Open settings").then((choice) => {
      if (choice) {
        vscode.commands.executeCommand("workbench.action.openSettings", "rbg.server");
      }
    });
  }
}

async function stop() {
  if (client) {
    const old = client;
    client = null;
    await old.stop();
  }
}

async function restart() {
  await stop();
  await start();
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("rbg.restartServer", restart),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("rbg.server")) {
        restart();
      }
    }),
  );
  await start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate };

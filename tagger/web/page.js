"use strict";
// The labelling page: every text goes on screen as text (textContent), never as markup.
const token = new URLSearchParams(location.search).get("token") || "";
const $ = (id) => document.getElementById(id);
let state = null;
let busy = false;

async function call(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: { "X-Tagger-Token": token, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => null);
  if (!data) throw new Error(`the server answered ${response.status}`);
  return data;
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function marked(target, text, marks) {
  target.replaceChildren();
  let at = 0;
  for (const [start, end, k] of marks) {
    if (start > at) target.append(document.createTextNode(text.slice(at, start)));
    target.append(element("mark", text.slice(start, end), `k${k}`));
    at = end;
  }
  if (at < text.length) target.append(document.createTextNode(text.slice(at)));
}

function feedback(last, error) {
  const line = $("feedback");
  line.className = "";
  if (error) { line.textContent = `not saved: ${error}`; line.className = "differ"; return; }
  if (!last) { line.textContent = ""; return; }
  if ("undone" in last) {
    line.textContent = last.undone ? `undone: ${last.answer} for ${last.id}` : `not undone: the label of ${last.id} was changed by someone else since`;
    return;
  }
  const named = (answer) => answer === state.none ? `${answer} (fits no area)` : answer;
  const guess = `the model said ${named(last.guess)} ${Number(last.confidence).toFixed(2)}` + (last.others ? `; ${last.others}` : "");
  if (last.answer === null) { line.textContent = `skipped ${last.id}; ${guess}`; return; }
  const answered = named(last.answer) + (last.flagged ? "; flagged" : "") + (last.commented ? "; with your comment" : "");
  line.textContent = `labelled ${answered}; ${guess}`;
  line.className = last.answer === last.guess ? "agree" : "differ";
}

function guidelines(areas) {  // the areas' descriptions: the labelling guidelines, as text
  const list = $("guideline-list");
  if (list.childElementCount || !areas.some((area) => area.description)) return;
  for (const area of areas) {
    list.append(element("dt", `${area.slug} (${area.name})`), element("dd", area.description || ""));
  }
  $("guidelines").hidden = false;
}

function retraining(info) {
  const box = $("retraining");
  $("retrain").hidden = !info.available;
  $("retrain").disabled = info.state === "running";
  box.replaceChildren();
  box.hidden = info.state === "idle";
  if (info.state === "running") box.append(element("p", "retraining on the labels as they are now…"));
  if (info.state === "failed") box.append(element("p", `retraining failed: ${info.error}`));
  if (info.state !== "done" || !info.result) return;
  const result = info.result;
  box.append(element("p", `retrained on ${result.labelled} labelled abstracts, saved to ${result.saved}; cross-validated figures:`));
  const table = element("table");
  const head = element("tr");
  for (const name of ["", "before", "after"]) head.append(element("th", name));
  table.append(head);
  for (const row of result.figures) {
    const tr = element("tr");
    tr.append(element("td", row.figure), element("td", row.before), element("td", row.after));
    table.append(tr);
  }
  box.append(table);
  box.append(element("p", result.moved));
}

function render() {
  const s = state;
  for (const kbd of document.querySelectorAll("kbd[data-key]")) kbd.textContent = s.keys[kbd.dataset.key];
  $("source").textContent = s.annotator ? `${s.source} · labelling as ${s.annotator}` : s.source;
  const none = s.no_area ? ` (${s.no_area} no area)` : "";
  $("progress").textContent = `${s.position} of ${s.total} · ${s.answered} labelled${none} · ${s.skipped} skipped`;
  const report = $("report");
  report.hidden = !s.report;
  report.href = `/report?token=${encodeURIComponent(token)}`;
  feedback(s.last, s.error);
  const item = s.item;
  $("card").hidden = !item;
  $("done").hidden = !!item;
  $("skip").disabled = !item || busy;
  $("none").disabled = !item || busy;
  $("undo").disabled = !s.can_undo || busy;
  const buttons = $("areas");
  buttons.replaceChildren();
  for (const area of s.areas) {
    const button = element("button", undefined, "area");
    button.type = "button";
    button.dataset.area = area.slug;
    button.title = area.description ? `${area.name}: ${area.description}` : area.name;
    if (area.key) button.append(element("kbd", area.key));
    button.append(document.createTextNode(area.slug));
    button.disabled = !item || busy;
    button.addEventListener("click", () => answer(area.slug));
    buttons.append(button);
  }
  guidelines(s.areas);
  retraining(s.retrain);
  if (!item) return;
  $("where").textContent = `${item.source} #${item.position} · id ${item.id}`;
  const current = $("current");
  current.hidden = !item.current_note;  // the label it has, or the answers a review settles
  current.textContent = item.current_note ? `${item.current_note}, skip leaves it` : "";
  $("title").hidden = !item.title;
  marked($("title"), item.title || "", item.title_marks);
  marked($("text"), item.text, item.text_marks);
  const legend = $("legend");
  legend.replaceChildren();
  if (item.highlighted) {
    legend.append(
      element("span", undefined, "swatch k0"),
      document.createTextNode(`the words that count most toward the model's ${item.highlighted} likeliest areas (which areas, and its guess, show after you answer)`),
    );
  }
}

async function send(path, body) {
  if (busy) return;
  busy = true;
  try {
    state = await call("POST", path, body === undefined ? {} : body);
  } catch (error) {
    $("feedback").textContent = `not saved: ${error.message}`;
  } finally {
    busy = false;
    if (state) render();
  }
}

// Every answer and undo names the abstract it is for: the server refuses one meant for an
// abstract that another tab has answered meanwhile, and sends the page what is current now.
// An answer carries the flag and the comment given with it (then cleared for the next one).
function remark() {
  const said = { comment: $("comment").value, flag: $("flag").checked };
  $("comment").value = "";
  $("comment").blur();
  $("flag").checked = false;
  return said;
}

function answer(slug) {
  if (!state || !state.item) return;
  send("/api/answer", slug === null ? { area: null, at: state.item.at } : { area: slug, at: state.item.at, ...remark() });
}

// "Fits no area", with the topic typed beside it (if any); the field is emptied once sent.
function noArea() {
  if (!state || !state.item) return;
  const topic = $("topic").value;
  $("topic").value = "";
  $("topic").blur();
  send("/api/answer", { area: state.none, at: state.item.at, topic, ...remark() });
}

function undo() {
  if (state && state.can_undo) send("/api/undo", { at: state.undo_at });
}

async function refresh() {
  state = await call("GET", "/api/state");
  render();
}

document.addEventListener("keydown", (event) => {
  if (!state || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target === $("topic")) {  // typing a topic: Enter answers "fits no area", Escape leaves it
    if (event.key === "Enter") { event.preventDefault(); noArea(); }
    if (event.key === "Escape") $("topic").blur();
    return;
  }
  if (event.target === $("comment")) {  // typing a comment: Enter or Escape leaves it, for the answer's key
    if (event.key === "Enter" || event.key === "Escape") { event.preventDefault(); $("comment").blur(); }
    return;
  }
  // A key held down repeats: one press is one answer, never a run of unread abstracts.
  if (event.repeat) { event.preventDefault(); return; }
  const key = event.key.toLowerCase();
  const keys = state.keys;  // the same letters as the terminal's (tagger.labelling.KEYS)
  if (key === keys.undo) { event.preventDefault(); undo(); return; }
  if (key === keys.retrain) { event.preventDefault(); if (state.retrain.available) send("/api/retrain"); return; }
  if (!state.item) return;
  if (event.key === keys.flag) { event.preventDefault(); $("flag").checked = !$("flag").checked; return; }
  if (key === keys.skip) { event.preventDefault(); answer(null); return; }
  if (key === keys.none) { event.preventDefault(); noArea(); return; }
  const area = state.areas.find((a) => a.key === key);
  if (area) { event.preventDefault(); answer(area.slug); }
});
$("skip").addEventListener("click", () => answer(null));
$("none").addEventListener("click", () => noArea());
$("undo").addEventListener("click", () => undo());
$("retrain").addEventListener("click", () => send("/api/retrain"));
setInterval(() => { if (state && state.retrain.state === "running") refresh(); }, 1000);
refresh().catch((error) => { $("feedback").textContent = `cannot reach tagger: ${error.message}`; });

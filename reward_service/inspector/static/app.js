// The rollout inspector's page: filters in the query string, data from /api/*, one page of groups at a time.
// Every text from the file is set with textContent (completions are model output: never parsed as HTML).
"use strict";

const FILTER_KEYS = ["status", "task", "step", "min_reward", "max_reward"];
const state = { page: 0, filters: {}, summary: null, pages: 1 };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("data-")) node.setAttribute(key, String(value));
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

function fmt(value, digits = 3) {
  if (value === null || value === undefined) return "–";
  return Number.isInteger(value) ? String(value) : value.toFixed(digits).replace(/0+$/, "").replace(/\.$/, "");
}

function plural(n, noun) {
  return `${n.toLocaleString()} ${noun}${n === 1 ? "" : "s"}`;
}

function readQuery() {
  const params = new URLSearchParams(location.search);
  state.filters = {};
  for (const key of FILTER_KEYS) if (params.get(key)) state.filters[key] = params.get(key);
  state.page = Math.max(0, parseInt(params.get("page") || "0", 10) || 0);
}

function query(extra) {
  const params = new URLSearchParams({ ...state.filters, ...extra });
  return params.toString();
}

function writeQuery() {
  const q = query(state.page ? { page: state.page } : {});
  history.replaceState(null, "", q ? `?${q}` : location.pathname);
}

async function getJSON(path) {
  const response = await fetch(path);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

// Reward -> a colour from red (the file's lowest reward) to green (its highest).
function rewardColor(reward) {
  const s = state.summary;
  if (reward === null || reward === undefined) return "var(--unscored)";
  const lo = s.reward_min ?? 0, hi = s.reward_max ?? 1;
  const t = hi > lo ? Math.min(1, Math.max(0, (reward - lo) / (hi - lo))) : 1;
  return `hsl(${Math.round(t * 120)}, 62%, 42%)`;
}

function renderFilters() {
  const s = state.summary;
  document.getElementById("source").textContent = s.source + (s.joined ? `  (joined with ${s.joined})` : "");
  document.getElementById("totals").textContent =
    `${s.rollouts.toLocaleString()} rollouts · ${s.groups.toLocaleString()} groups · ` +
    (s.step_min !== null ? `steps ${s.step_min}–${s.step_max} · ` : "") +
    `mean reward ${fmt(s.reward_mean)} over ${s.scored.toLocaleString()} scored`;
  const chosen = new Set((state.filters.status || "").split(",").filter(Boolean));
  const box = document.getElementById("status-filter");
  box.querySelectorAll("label").forEach((node) => node.remove());
  for (const status of s.statuses) {
    box.append(el("label", { class: `chip status-${status.name}` },
      el("input", { type: "checkbox", value: status.name, checked: chosen.has(status.name) }),
      ` ${status.name} `, el("span", { class: "count", text: status.count.toLocaleString() })));
  }
  const task = document.getElementById("task");
  task.replaceChildren(el("option", { value: "", text: "all" }),
    ...s.tasks.map((t) => el("option", { value: t.name, text: `${t.name || "(none)"} (${t.count})` })));
  task.value = state.filters.task || "";
  for (const key of ["step", "min_reward", "max_reward"]) document.getElementById(key).value = state.filters[key] || "";
}

function filtersFromForm() {
  const filters = {};
  const statuses = [...document.querySelectorAll("#status-filter input:checked")].map((box) => box.value);
  if (statuses.length) filters.status = statuses.join(",");
  for (const key of ["task", "step", "min_reward", "max_reward"]) {
    const value = document.getElementById(key).value.trim();
    if (value) filters[key] = value;
  }
  return filters;
}

function renderHistograms(data) {
  const charts = document.getElementById("charts");
  charts.replaceChildren();
  const edges = data.edges;
  document.getElementById("hist-note").textContent =
    `(bins ${fmt(edges[0])} to ${fmt(edges[edges.length - 1])}; click a step to filter)`;
  const peak = Math.max(1, ...data.charts.map((c) => Math.max(...c.counts)));
  const w = 120, h = 56, bw = w / data.edges.length;
  for (const chart of data.charts) {
    const label = chart.step_min === null ? "all" :
      chart.step_min === chart.step_max ? `step ${chart.step_min}` : `steps ${chart.step_min}–${chart.step_max}`;
    const picture = svg("svg", { width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: "img" });
    chart.counts.forEach((count, i) => {
      const bh = Math.round((count / peak) * (h - 4));
      const mid = (edges[i] + edges[i + 1]) / 2;
      const bar = svg("rect", { x: i * bw + 1, y: h - bh, width: bw - 2, height: bh, fill: rewardColor(mid) });
      bar.append(svg("title", {}));
      bar.firstChild.textContent = `${fmt(edges[i])}–${fmt(edges[i + 1])}: ${count}`;
      picture.append(bar);
    });
    if (chart.unscored) {
      const uh = Math.round((chart.unscored / peak) * (h - 4));
      picture.append(svg("rect", { x: w - bw + 1, y: h - uh, width: bw - 2, height: uh, fill: "var(--unscored)" }));
    }
    const range = chart.step_min === null ? "" :
      chart.step_min === chart.step_max ? String(chart.step_min) : `${chart.step_min}-${chart.step_max}`;
    charts.append(el("button", {
      type: "button", class: "chart", "data-step": range, title: "show only these steps",
      onclick: () => { state.filters.step = range; state.page = 0; apply(); },
    }, picture, el("div", { class: "chart-label", text: label }),
    el("div", { class: "chart-stats muted",
      text: `mean ${fmt(chart.mean, 2)} · n ${chart.scored}` + (chart.unscored ? ` · ${chart.unscored} unscored` : "") })));
  }
  if (!data.charts.length) charts.append(el("p", { class: "muted", text: "no rollouts match" }));
}

function renderRollout(r) {
  const head = el("div", { class: "rollout-head" },
    el("span", { class: "reward", style: `background:${rewardColor(r.reward)}`, text: r.reward === null ? "unscored" : fmt(r.reward) }),
    el("span", { class: `status status-${r.status}`, text: r.status }),
    r.advantage !== null ? el("span", { class: "advantage muted", text: `adv ${fmt(r.advantage, 2)}` }) : null,
    r.kept === false ? el("span", { class: "muted", text: "not kept" }) : null,
    el("span", { class: "rollout-id muted", text: r.id }));
  const parts = [head];
  if (r.explanation) parts.push(el("div", { class: "explanation", text: r.explanation }));
  if (r.error) parts.push(el("div", { class: "error", text: r.error }));
  if (r.extracted) parts.push(el("div", { class: "extracted muted", text: `extracted: ${r.extracted}` }));
  const components = Object.entries(r.components || {});
  const onlyTheReward = components.length === 1 && components[0][1] === r.reward;
  if (components.length && !onlyTheReward) {
    parts.push(el("div", { class: "components muted", text: components.map(([k, v]) => `${k} ${fmt(v)}`).join(" · ") }));
  }
  parts.push(el("pre", { class: "completion", text: r.completion || "(no completion in this file)" }));
  return el("article", {
    class: r.match ? "rollout match" : "rollout dim", "data-id": r.id, "data-status": r.status,
    "data-reward": r.reward === null ? "" : r.reward,
  }, ...parts);
}

function renderGroup(g) {
  const title = el("div", { class: "group-head" },
    g.step !== null ? el("span", { class: "step", text: `step ${g.step}` }) : null,
    el("span", { class: "task", text: g.task || "(no task)" }),
    el("span", { class: "muted", text: g.group_id }),
    el("span", { class: "group-mean", text: `mean ${fmt(g.reward_mean, 2)} · ${g.rollouts.length} rollouts` }),
    el("span", { class: "strip" }, ...g.rollouts.map((r) =>
      el("span", { class: "dot", title: `${r.id}: ${r.status} ${fmt(r.reward)}`, style: `background:${rewardColor(r.reward)}` }))));
  const prompt = g.prompt ? el("details", { class: "prompt" }, el("summary", { text: g.prompt.split("\n")[0].slice(0, 160) }),
    el("pre", { text: g.prompt })) : null;
  const reference = g.reference !== null && g.reference !== undefined ?
    el("div", { class: "reference muted", text: `reference: ${typeof g.reference === "string" ? g.reference : JSON.stringify(g.reference)}` }) : null;
  return el("section", { class: "group", "data-group-id": g.group_id, "data-step": g.step ?? "" },
    title, prompt, reference, el("div", { class: "members" }, ...g.rollouts.map(renderRollout)));
}

function renderGroups(data) {
  state.pages = data.pages;
  state.page = data.page;
  document.getElementById("summary").textContent =
    `${plural(data.matching_groups, "group")} with ${plural(data.matching_rollouts, "matching rollout")}` +
    ` · page ${data.page + 1} of ${data.pages}`;
  document.querySelectorAll(".page-of").forEach((n) => { n.textContent = `page ${data.page + 1} of ${data.pages}`; });
  document.querySelectorAll(".prev").forEach((b) => { b.disabled = data.page <= 0; });
  document.querySelectorAll(".next").forEach((b) => { b.disabled = data.page >= data.pages - 1; });
  document.getElementById("groups").replaceChildren(...data.groups.map(renderGroup));
}

async function apply() {
  writeQuery();
  document.body.dataset.state = "loading";
  const message = document.getElementById("message");
  try {
    const [summary, groups, histograms] = await Promise.all([getJSON("/api/summary"),  // a run may have grown
      getJSON(`/api/groups?${query({ page: state.page })}`), getJSON(`/api/histograms?${query({})}`)]);
    state.summary = summary;
    renderFilters();
    renderHistograms(histograms);
    renderGroups(groups);
    message.textContent = "";
    document.body.dataset.state = "ready";
  } catch (error) {
    message.textContent = `error: ${error.message}`;
    document.body.dataset.state = "error";
  }
}

function goto(delta) {
  const page = state.page + delta;
  if (page < 0 || page >= state.pages) return;
  state.page = page;
  apply().then(() => window.scrollTo(0, 0));
}

async function main() {
  readQuery();
  document.getElementById("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    state.filters = filtersFromForm();
    state.page = 0;
    apply();
  });
  document.getElementById("reset").addEventListener("click", () => { state.filters = {}; state.page = 0; apply(); });
  document.querySelectorAll(".prev").forEach((b) => b.addEventListener("click", () => goto(-1)));
  document.querySelectorAll(".next").forEach((b) => b.addEventListener("click", () => goto(1)));
  document.addEventListener("keydown", (event) => {
    if (event.target.closest("input, select, textarea")) return;
    if (event.key === "ArrowLeft") goto(-1);
    if (event.key === "ArrowRight") goto(1);
  });
  await apply();
}

main();

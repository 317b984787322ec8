// rbg view: the only script, served as a file (CSP `script-src 'self'`).
// It never runs anything from the page's data: it submits the filter form
// when a select or checkbox changes, marks a graph node when clicked, and in
// a static export filters the items table in the browser, reading its rows
// from the JSON file the form names (`data-rows`) and writing them with
// textContent only.
"use strict";

var STATUSES = ["ok", "abstain", "error"];
var SORTS = ["file", "item", "decision", "gold", "status", "margin"];

// The query of the page's address, read as `table.Query.parse` reads it.
function parseQuery(search) {
  var p = new URLSearchParams(search);
  var num = function (name) {
    var t = p.get(name);
    if (!t) { return null; }
    var x = Number(t);
    return isFinite(x) && t.trim() !== "" ? x : null;
  };
  var page = /^\d+$/.test(p.get("page") || "") ? Math.max(1, parseInt(p.get("page"), 10)) : 1;
  return {
    src: p.get("src") || "",
    status: STATUSES.indexOf(p.get("status")) >= 0 ? p.get("status") : "",
    disagree: p.get("disagree") === "1",
    low: num("low"), high: num("high"),
    text: (p.get("q") || "").slice(0, 200),
    decision: (p.get("decision") || "").slice(0, 200),
    gold: (p.get("gold") || "").slice(0, 200),
    scored: p.get("scored") || "",
    sort: SORTS.indexOf(p.get("sort")) >= 0 ? p.get("sort") : "file",
    desc: p.get("desc") === "1",
    page: page
  };
}

function queryString(q, changes) {
  var all = Object.assign({}, q, changes || {});
  var p = new URLSearchParams();
  var put = function (k, v) { if (v !== "" && v !== null && v !== false) { p.set(k, String(v)); } };
  put("src", all.src); put("status", all.status); put("disagree", all.disagree ? "1" : "");
  put("low", all.low); put("high", all.high); put("q", all.text); put("decision", all.decision);
  put("gold", all.gold); put("scored", all.scored); put("sort", all.sort === "file" ? "" : all.sort);
  put("desc", all.desc ? "1" : ""); put("page", all.page === 1 ? "" : all.page);
  return "?" + p.toString();
}

function keeps(q, needle, r) {
  if (q.status && r.status !== q.status) { return false; }
  if (q.disagree && !r.disagrees) { return false; }
  if (q.low !== null && (r.number === null || r.number < q.low)) { return false; }
  if (q.high !== null && (r.number === null || r.number > q.high)) { return false; }
  if (q.decision && r.decided !== q.decision) { return false; }
  if (q.gold && (r.gold_label === null || r.gold_label !== q.gold)) { return false; }
  return !needle || r.text.indexOf(needle) >= 0;
}

// A label that is a number, to 4 significant digits, as the server shows
// it (`pages.shown_label`, docs/view.md "Numbers"): 4.6666666667 is 4.667.
function shownLabel(text) {
  return /^-?\d+(\.\d+)?(e[-+]?\d+)?$/.test(text) ? String(parseFloat(Number(text).toPrecision(4))) : text;
}

function cell(tr, text) {
  var td = document.createElement("td");
  td.textContent = text;
  tr.appendChild(td);
  return td;
}

function showRows(data, q) {
  var order = q.sort === "file" ? data.rows.map(function (_, i) { return i; }) : data.orders[q.sort].slice();
  if (q.desc) { order.reverse(); }
  if (q.scored) {
    var among = new Set(data.scored[q.scored] || []);
    order = order.filter(function (i) { return among.has(i); });
  }
  var needle = q.text.toLowerCase().trim();
  var rows = order.map(function (i) { return data.rows[i]; }).filter(function (r) { return keeps(q, needle, r); });
  var pages = Math.max(1, Math.ceil(rows.length / data.page_size));
  var page = Math.min(q.page, pages);
  var body = document.querySelector("#items tbody");
  body.replaceChildren();
  rows.slice((page - 1) * data.page_size, page * data.page_size).forEach(function (r) {
    var tr = document.createElement("tr");
    tr.className = r.status + (r.disagrees ? " disagrees" : "");
    var a = document.createElement("a");
    a.href = r.href;
    a.textContent = r.item;
    cell(tr, "").appendChild(a);
    cell(tr, r.status); cell(tr, r.decision); cell(tr, r.gold === null ? "\u2014" : r.gold);
    r.values.forEach(function (v) { cell(tr, v); });
    body.appendChild(tr);
  });
  var count = rows.length + " of " + data.rows.length + " items";
  if (q.decision) { count += "; decision " + shownLabel(q.decision); }
  if (q.gold) { count += "; gold " + shownLabel(q.gold); }
  if (q.scored && data.scored_names[q.scored]) { count += "; " + data.scored_names[q.scored]; }
  document.getElementById("count").textContent = count + "; page " + page + " of " + pages;
  document.querySelectorAll("#items th a[data-sort]").forEach(function (a) {
    var key = a.getAttribute("data-sort");
    a.href = queryString(q, { sort: key, desc: q.sort === key && !q.desc, page: 1 });
  });
  var pager = document.querySelector("p.pager");
  pager.replaceChildren();
  [["prev", "previous", page - 1, page > 1], ["next", "next", page + 1, page < pages]].forEach(function (p) {
    if (!p[3]) { return; }
    var a = document.createElement("a");
    a.rel = p[0];
    a.href = queryString(q, { page: p[2] });
    a.textContent = p[1];
    pager.appendChild(a);
    pager.appendChild(document.createTextNode(" "));
  });
}

function staticFilters(form) {
  var q = parseQuery(window.location.search);
  // The page as exported is already right for no query (and for the quick
  // filters' own pages, which carry none in their address).
  if (!window.location.search) { return Promise.resolve(); }
  form.elements.status.value = q.status;
  form.elements.disagree.checked = q.disagree;
  form.elements.low.value = q.low === null ? "" : String(q.low);
  form.elements.high.value = q.high === null ? "" : String(q.high);
  form.elements.q.value = q.text;
  [["decision", q.decision], ["gold", q.gold], ["scored", q.scored], ["sort", q.sort], ["desc", q.desc ? "1" : ""]].forEach(function (kv) {
    var el = form.elements[kv[0]];
    if (!el && kv[1]) {
      el = document.createElement("input");
      el.type = "hidden";
      el.name = kv[0];
      form.appendChild(el);
    }
    if (el) { el.value = kv[1]; }
  });
  return fetch(form.getAttribute("data-rows")).then(function (r) {
    if (!r.ok) { throw new Error("HTTP " + r.status); }
    return r.json();
  }).then(function (data) { showRows(data, q); }, function (err) {
    document.getElementById("filters-note").textContent = "The filters could not read " + form.getAttribute("data-rows") +
      " (" + err.message + "): serve the export over HTTP (python -m http.server -d DIR) to filter here. The quick filters, sorting and paging links work.";
    document.body.setAttribute("data-filters", "unavailable");
  });
}

document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".autosubmit").forEach(function (el) {
    el.addEventListener("change", function () { el.form.submit(); });
  });
  document.querySelectorAll("svg.graph .node").forEach(function (node) {
    node.addEventListener("click", function () { node.classList.toggle("selected"); });
  });
  var form = document.querySelector("form#filters[data-rows]");
  var done = form ? staticFilters(form) : Promise.resolve();
  done.then(function () { document.body.setAttribute("data-ready", "1"); });
});

"""The page's stylesheet, inlined so the page needs nothing else."""

CSS = """
:root { --ink: #1d232b; --muted: #5b6673; --line: #d9dee4; --soft: #f4f6f8;
  --bad: #c2410c; --bad-soft: #fde7da; --good: #1d6fb8; --good-soft: #dcebf8;
  --del: #fbd3d0; --del-ink: #8a1c12; --ins: #cdeed5; --ins-ink: #11592a; --warn: #fff4d6; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 0 24px 64px; }
header.top { background: var(--soft); border-bottom: 1px solid var(--line); margin-bottom: 8px; }
header.top div { max-width: 1180px; margin: 0 auto; padding: 20px 24px 12px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h1 code { font-size: inherit; }
h2 { font-size: 20px; margin: 36px 0 12px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 16px; margin: 0 0 6px; overflow-wrap: anywhere; }
h4 { font-size: 14px; margin: 16px 0 6px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
h5 { font-size: 13px; margin: 10px 0 4px; color: var(--muted); font-weight: 600; }
code, .text, .hash { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  font-size: 13px; }
.hash { overflow-wrap: anywhere; }
nav.toc { font-size: 14px; }
nav.toc a { margin-right: 14px; }
a { color: var(--good); }
.sub { color: var(--muted); margin: 0 0 8px; }
.what { display: block; color: var(--muted); font-size: 12.5px; font-weight: normal; }
.muted, .muted th { color: var(--muted); }
.note { color: var(--muted); font-size: 14px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 14px; }
th, td { text-align: left; vertical-align: top; padding: 5px 10px; border-bottom: 1px solid var(--line); }
thead th { font-size: 12.5px; color: var(--muted); font-weight: 600; border-bottom: 2px solid var(--line); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.big { font-size: 17px; font-weight: 600; }
table.metrics th[scope=row] { min-width: 300px; }
table.facts th { color: var(--muted); font-weight: 600; white-space: nowrap; }
table.operators td, table.operators th { font-size: 13px; padding: 4px 8px; }
ul.plain { margin: 0; padding-left: 18px; }
.countgroups { display: flex; flex-wrap: wrap; gap: 12px 28px; margin: 10px 0 16px; }
.grouptitle { font-size: 12.5px; font-weight: 600; color: var(--muted); margin-bottom: 4px; }
dl.counts { display: flex; flex-wrap: wrap; gap: 8px; margin: 0; }
dl.counts div { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 5px 12px;
  min-width: 84px; }
dl.counts dt { font-size: 12px; color: var(--muted); }
dl.counts dd { margin: 0; font-size: 18px; font-weight: 600; font-variant-numeric: tabular-nums; }
section.machine { background: var(--warn); border: 1px solid #e7cf86; border-left: 6px solid #d4a514;
  border-radius: 6px; padding: 4px 18px 10px; margin-top: 28px; }
section.machine h2 { border-bottom: none; margin-top: 12px; }
.warn { font-size: 14px; }
.prose { white-space: pre-wrap; max-width: 80ch; }
figure.chart { margin: 10px 0 24px; overflow-x: auto; }
figcaption { font-weight: 600; margin-bottom: 4px; }
svg.chart text { font-size: 12px; fill: var(--ink); }
svg.chart .tick, svg.chart .figures, svg.chart .none { fill: var(--muted); }
svg.chart .figures { font-variant-numeric: tabular-nums; }
svg.chart .surface { font-weight: 700; font-size: 12.5px; text-transform: uppercase; letter-spacing: .05em;
  fill: var(--muted); }
svg.chart .label.total { font-weight: 600; }
svg.chart .grid { stroke: var(--line); stroke-width: 1; }
svg.chart .whisker { stroke: var(--ink); stroke-width: 1.5; }
svg.flip .bar { fill: #f3a77f; } svg.flip .bar.total { fill: var(--bad); }
svg.detect .bar { fill: #8fbde6; } svg.detect .bar.total { fill: var(--good); }
ol.queue { padding-left: 0; list-style: none; }
li.qitem { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin-bottom: 8px; }
li.qitem:target, article.finding:target { outline: 3px solid #f0b429; }
.qhead .rank { font-weight: 700; color: var(--muted); }
.qhead .what { display: inline; margin-left: 6px; }
li.qitem ul { margin: 6px 0 0; padding-left: 20px; }
li.qitem li { margin-bottom: 4px; }
.verdict { margin-left: 4px; font-weight: 600; }
.badge { display: inline-block; font-size: 11.5px; font-weight: 700; text-transform: uppercase; letter-spacing: .04em;
  border-radius: 10px; padding: 0 8px; vertical-align: 1px; }
.badge.flipped, .badge.missed { background: var(--bad-soft); color: var(--bad); }
.badge.failed { background: #eee; color: #444; }
article.finding { padding: 8px 0; }
article.finding + article.finding { border-top: 2px solid var(--line); padding-top: 16px; margin-top: 8px; }
.meta { color: var(--muted); font-size: 14px; margin: 0; overflow-wrap: anywhere; }
table.decisions td.dec { text-align: center; min-width: 44px; font-family: ui-monospace, Menlo, Consolas, monospace;
  font-size: 13px; }
table.decisions td.off { background: var(--bad-soft); color: var(--bad); font-weight: 700; }
table.decisions td.sum { font-weight: 700; }
table.moved tr.criterion td:first-child { border-left: 3px solid var(--bad); }
.sink.reached { color: var(--bad); font-weight: 600; }
.absorbed { margin: 4px 0; }
.field { margin-bottom: 10px; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; }
.side { border: 1px solid var(--line); border-radius: 6px; overflow: hidden; min-width: 0; }
.side-label { font-size: 11.5px; text-transform: uppercase; letter-spacing: .05em; color: var(--muted);
  background: var(--soft); padding: 2px 8px; border-bottom: 1px solid var(--line); }
.text { white-space: pre-wrap; overflow-wrap: anywhere; padding: 6px 8px; margin: 0; }
.field > .text { border: 1px solid var(--line); border-radius: 6px; }
del { background: var(--del); color: var(--del-ink); text-decoration: line-through; text-decoration-thickness: 1px; }
ins { background: var(--ins); color: var(--ins-ink); text-decoration: none; }
.absent { color: var(--muted); font-style: italic; }
.empty { display: inline-block; border: 1px dashed var(--muted); border-radius: 3px; padding: 0 6px;
  color: var(--muted); font-style: italic; }
ol.conversation, ol.documents, ol.entries { list-style: none; padding: 0; margin: 4px 0; }
.call .head { overflow-wrap: anywhere; }
.call code.id { color: var(--muted); }
.turn, .document { border-left: 3px solid var(--line); padding: 2px 0 2px 8px; margin: 6px 0; }
.turn .head .role, .result .head .role { font-weight: 600; text-transform: uppercase; font-size: 11.5px; }
.turn-no { color: var(--muted); font-size: 12px; }
.call { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; background: var(--soft); padding: 4px 8px; }
.call > div { min-width: 0; }
li.same summary { color: var(--muted); font-size: 12.5px; cursor: pointer; margin: 4px 0; }
pre.text, pre.json { white-space: pre-wrap; overflow-wrap: anywhere; margin: 2px 0; }
.changed { background: var(--warn); }
details.unchanged summary { cursor: pointer; color: var(--muted); font-size: 14px; }
.back { font-size: 13px; }
footer { color: var(--muted); font-size: 13px; margin-top: 40px; }
@media print { li.qitem, article.finding { break-inside: avoid; } }
"""

// rbg view: the only script, served as a file (CSP `script-src 'self'`).
// It reads nothing from the page's data as code: it only submits the filter
// form when a select or checkbox changes, and marks a graph node when clicked.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".autosubmit").forEach(function (el) {
    el.addEventListener("change", function () { el.form.submit(); });
  });
  document.querySelectorAll("svg.graph .node").forEach(function (node) {
    node.addEventListener("click", function () { node.classList.toggle("selected"); });
  });
  document.body.setAttribute("data-ready", "1");
});

// Forecourt console: small progressive enhancement. Every page works without it (read-only pages fully).
// 1. Elements with data-poll-url refresh their content from that URL every data-poll-seconds.
// 2. Forms with data-upload send their file with a progress bar that follows the upload and then the import
//    itself, batch by batch, and show the import report in place.
(function () {
  "use strict";

  function poll(el) {
    var seconds = Math.max(2, parseInt(el.getAttribute("data-poll-seconds") || "10", 10));
    window.setInterval(function () {
      if (document.hidden) { return; }
      fetch(el.getAttribute("data-poll-url"), { credentials: "same-origin", headers: { "X-Console-Fragment": "1" } })
        .then(function (r) { return r.ok && !r.redirected ? r.text() : null; })
        .then(function (html) { if (html !== null) { el.innerHTML = html; } })
        .catch(function () { /* keep the last panel */ });
    }, seconds * 1000);
  }

  // The upload fills the first tenth of the bar; the import, reported as JSON lines while it runs
  // (X-Console-Progress: 1), fills the rest, batch by batch; the last line carries the report.
  function upload(form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var bar = form.querySelector("progress");
      var note = form.querySelector(".progress-text");
      var out = form.querySelector(".report");
      var button = form.querySelector("button[type=submit]");
      var xhr = new XMLHttpRequest();
      var seen = 0;
      function say(text) { if (note) { note.textContent = text; } }
      function lines() {
        var body = xhr.responseText;
        var end = body.lastIndexOf("\n");
        if (end < seen) { return; }
        body.slice(seen, end).split("\n").forEach(function (line) {
          if (!line) { return; }
          var item;
          try { item = JSON.parse(line); } catch (e) { return; }
          if (item.phase === "import") {
            bar.value = 10 + (item.total ? Math.round((item.done / item.total) * 90) : 0);
            say("Imported " + item.done + " of " + item.total + " rows");
          } else if (item.phase === "done") {
            bar.value = 100;
            say("Import finished");
            out.innerHTML = item.html;
          } else if (item.phase === "error") {
            say("The import failed: " + item.message + " (" + item.code + ")");
          }
        });
        seen = end + 1;
      }
      xhr.open("POST", form.action);
      xhr.setRequestHeader("X-Console-Fragment", "1");
      xhr.setRequestHeader("X-Console-Progress", "1");
      bar.hidden = false;
      bar.value = 0;
      out.textContent = "";
      say("Uploading");
      button.disabled = true;
      xhr.upload.addEventListener("progress", function (e) {
        if (e.lengthComputable) { bar.value = Math.round((e.loaded / e.total) * 10); }
      });
      xhr.addEventListener("progress", lines);
      xhr.addEventListener("load", function () {
        button.disabled = false;
        var type = xhr.getResponseHeader("Content-Type") || "";
        if (type.indexOf("application/x-ndjson") === 0) {
          lines();
        } else if (type.indexOf("application/json") === 0) {
          // Refused before the console saw it (the request guard: too large, no declared size): say why in words.
          var error = {};
          try { error = (JSON.parse(xhr.responseText).error) || {}; } catch (e) { error = {}; }
          out.textContent = "";
          say("The upload was refused: " + (error.message || ("HTTP " + xhr.status)) + (error.code ? " (" + error.code + ")" : ""));
        } else {
          out.innerHTML = xhr.responseText;
          say(xhr.status < 400 ? "" : "The import was refused");
        }
      });
      xhr.addEventListener("error", function () {
        button.disabled = false;
        say("The upload failed; try again.");
      });
      xhr.send(new FormData(form));
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("[data-poll-url]"), poll);
    Array.prototype.forEach.call(document.querySelectorAll("form[data-upload]"), upload);
  });
})();

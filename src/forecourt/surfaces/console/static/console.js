// Forecourt console: small progressive enhancement. Every page works without it (read-only pages fully).
// 1. Elements with data-poll-url refresh their content from that URL every data-poll-seconds.
// 2. Forms with data-upload send their file with a progress bar and show the import report in place.
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

  function upload(form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var bar = form.querySelector("progress");
      var out = form.querySelector(".report");
      var button = form.querySelector("button[type=submit]");
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.action);
      xhr.setRequestHeader("X-Console-Fragment", "1");
      bar.hidden = false;
      bar.value = 0;
      button.disabled = true;
      xhr.upload.addEventListener("progress", function (e) {
        if (e.lengthComputable) { bar.value = Math.round((e.loaded / e.total) * 90); }
      });
      xhr.addEventListener("load", function () {
        bar.value = 100;
        button.disabled = false;
        out.innerHTML = xhr.responseText;
      });
      xhr.addEventListener("error", function () {
        button.disabled = false;
        out.textContent = "The upload failed; try again.";
      });
      xhr.send(new FormData(form));
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("[data-poll-url]"), poll);
    Array.prototype.forEach.call(document.querySelectorAll("form[data-upload]"), upload);
  });
})();

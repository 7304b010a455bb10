// Ferry's upload page: sends the picked files with tus (tus-js-client),
// one at a time, resuming from the server's offset after a dropped
// connection or, once the same file is picked again, after a reload.
// Names are only ever set with textContent: no markup from a file name
// renders.
(function () {
  "use strict";
  var app = document.getElementById("app");
  var endpoint = app.dataset.endpoint;
  var chunk = parseInt(app.dataset.chunk, 10);
  var device = app.dataset.device;
  var input = document.getElementById("files");
  var drop = document.getElementById("drop");
  var list = document.getElementById("list");
  var total = document.getElementById("total");
  var totalBar = document.getElementById("total-bar");
  var status = document.getElementById("status");

  var queue = [], running = false;
  var sent = 0, failed = 0, allBytes = 0, doneBytes = 0;
  var speedMark = null;

  function size(n) {
    var u = ["B", "KB", "MB", "GB", "TB"], i = 0;
    while (n >= 1000 && i < u.length - 1) { n /= 1000; i++; }
    return (i ? n.toFixed(n < 10 ? 1 : 0) : n) + " " + u[i];
  }

  function add(files) {
    for (var i = 0; i < files.length; i++) {
      var f = files[i];
      var li = document.createElement("li");
      var name = document.createElement("span");
      name.className = "name";
      name.textContent = f.name;
      var state = document.createElement("span");
      state.className = "state";
      state.textContent = "waiting · " + size(f.size);
      var bar = document.createElement("progress");
      bar.max = 1; bar.value = 0;
      bar.setAttribute("aria-label", f.name);
      li.appendChild(name); li.appendChild(state); li.appendChild(bar);
      list.appendChild(li);
      queue.push({ file: f, state: state, bar: bar });
      allBytes += f.size;
    }
    totalBar.hidden = false;
    show(0);
    next();
  }

  function show(current) {
    var now = allBytes ? (doneBytes + current) / allBytes : 0;
    totalBar.value = now;
    var text = size(doneBytes + current) + " of " + size(allBytes);
    if (speedMark && performance.now() > speedMark.t + 500) {
      var s = (doneBytes + current - speedMark.b) / ((performance.now() - speedMark.t) / 1000);
      if (s > 0) text += " · " + size(s) + "/s";
    }
    total.textContent = text;
  }

  function next() {
    if (running) return;
    var job = queue.shift();
    if (!job) { finish(); return; }
    running = true;
    send(job);
  }

  function finish() {
    if (sent + failed === 0) return;
    var msg = sent + (sent === 1 ? " file" : " files") + " sent to " + device;
    if (failed) msg += "; " + failed + (failed === 1 ? " file was" : " files were") + " not sent";
    status.textContent = msg + ".";
  }

  function reason(err) {
    var res = err && err.originalResponse;
    if (!res) return "the connection was lost";
    var st = res.getStatus();
    if (st === 410) return "this link has ended";
    var body = (res.getBody && res.getBody()) || "";
    if (body && body.charAt(0) !== "<") return body.replace(/^ERR_[A-Z_]+: /, "").trim();
    return "the receiving device refused it (" + st + ")";
  }

  function send(job) {
    var f = job.file;
    var started = false;
    var upload = new tus.Upload(f, {
      endpoint: endpoint,
      chunkSize: chunk,
      retryDelays: [0, 1000, 2000, 3000, 5000, 5000, 10000, 10000, 10000, 20000, 20000, 30000],
      removeFingerprintOnSuccess: true,
      metadata: { filename: f.name, filetype: f.type || "application/octet-stream", lastmodified: String(f.lastModified || "") },
      onProgress: function (bytes, all) {
        if (!started) {
          started = true;
          speedMark = speedMark || { t: performance.now(), b: doneBytes + bytes };
        }
        job.bar.value = all ? bytes / all : 1;
        job.state.textContent = size(bytes) + " of " + size(all);
        show(bytes);
      },
      onSuccess: function () {
        job.bar.value = 1;
        job.state.textContent = "sent · " + size(f.size);
        sent++; doneBytes += f.size;
        show(0);
        running = false; next();
      },
      onError: function (err) {
        job.state.textContent = "not sent: " + reason(err);
        job.state.classList.add("error");
        failed++; allBytes -= f.size;
        show(0);
        running = false; next();
      }
    });
    upload.findPreviousUploads().then(function (previous) {
      if (previous.length) {
        upload.resumeFromPreviousUpload(previous[0]);
        job.state.textContent = "continuing where it stopped";
      } else {
        job.state.textContent = "starting";
      }
      upload.start();
    });
  }

  input.addEventListener("change", function () {
    add(input.files);
    input.value = "";
  });
  drop.addEventListener("dragover", function (e) { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", function () { drop.classList.remove("over"); });
  drop.addEventListener("drop", function (e) {
    e.preventDefault();
    drop.classList.remove("over");
    if (e.dataTransfer && e.dataTransfer.files) add(e.dataTransfer.files);
  });
})();

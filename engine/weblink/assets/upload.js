// Ferry's upload page: sends the picked files with tus (tus-js-client),
// one at a time, resuming from the server's offset after a dropped
// connection or, once the same file is picked again, after a reload.
// The same files picked again after a reload (a phone's browser reloads a
// tab it put away) continue their set: the files sent before are not sent
// twice, and the receiving device finishes it as the one transfer it was.
// A folder (picked, or dropped) is sent as its files, each with its path
// in the folder (the upload's "relativepath"), and arrives as that tree;
// the deepest empty folders of a folder dropped go as uploads of no bytes
// with the "folder" metadata, each made there with the folders above it.
// Names are only ever set with textContent: no markup from a file name
// renders.
(function () {
  "use strict";
  var app = document.getElementById("app");
  var endpoint = app.dataset.endpoint;
  var chunk = parseInt(app.dataset.chunk, 10);
  var device = app.dataset.device;
  var input = document.getElementById("files");
  var folderInput = document.getElementById("folder");
  var drop = document.getElementById("drop");
  var list = document.getElementById("list");
  var total = document.getElementById("total");
  var totalBar = document.getElementById("total-bar");
  var status = document.getElementById("status");

  var queue = [], running = false;
  var sent = 0, failed = 0, allBytes = 0, doneBytes = 0, foldersSent = 0;
  var speedMark = null;
  var linkGone = false; // the link ended (a 410): nothing more can be sent

  function size(n) {
    var u = ["B", "KB", "MB", "GB", "TB"], i = 0;
    while (n >= 1000 && i < u.length - 1) { n /= 1000; i++; }
    return (i ? n.toFixed(n < 10 ? 1 : 0) : n) + " " + u[i];
  }

  // add queues files: each {file, path}, path being the file's place in
  // a folder sent ("Trip/day 1/IMG_1.jpg"), "" for a file by itself; or
  // an empty folder, {file: an empty File of its name, path, folder: true}.
  function add(files) {
    if (!files.length) return; // a picker closed without a file: no set
    // The files picked or dropped together are one set ("batch"): the
    // receiver shows them as one delivery. Its size, and the one folder
    // it is when a folder came alone, go with each file. A set this page
    // began and did not finish (kept in localStorage) goes on under its ID.
    var keys = files.map(function (x) { return fileKey(x.path, x.file, x.folder); });
    var setKey = "ferry-set|" + hash(endpoint + "\n" + keys.slice().sort().join("\n"));
    if (activeSets[setKey]) setKey = null; // the same files again, while they go: a set of their own
    var saved = setKey && loadSet(setKey);
    var batch = { id: saved ? saved.id : randomID(), files: files.length, folders: 0, bytes: 0, top: "",
                  key: setKey, keys: keys, left: files.length, resumed: !!saved };
    if (setKey) activeSets[setKey] = true;
    saveSet(batch);
    // A file whose upload this page began before a reload, picked again
    // with others, goes on as that upload, of the set it began in: a new
    // set does not count it (it would wait for it for ever).
    var going = batch.resumed ? {} : uploadsKept();
    var tops = {};
    for (var k = 0; k < files.length; k++) {
      if (going[keys[k]]) { batch.files--; continue; }
      if (files[k].folder) batch.folders++; // counted apart on the device
      batch.bytes += files[k].file.size;
      var p = files[k].path || "";
      tops[p.indexOf("/") > 0 ? p.slice(0, p.indexOf("/")) : "/" + files[k].file.name] = true;
    }
    var names = Object.keys(tops);
    if (names.length === 1 && names[0].charAt(0) !== "/") batch.top = names[0];
    for (var i = 0; i < files.length; i++) {
      var f = files[i].file, where = files[i].path || f.name, fk = keys[i], folder = !!files[i].folder;
      if (folder) where += "/";
      var li = document.createElement("li");
      var name = document.createElement("span");
      name.className = "name";
      name.textContent = where;
      var state = document.createElement("span");
      state.className = "state";
      state.textContent = "waiting · " + (folder ? "empty folder" : size(f.size));
      var bar = document.createElement("progress");
      bar.max = 1; bar.value = 0;
      bar.setAttribute("aria-label", where);
      var stop = document.createElement("button");
      stop.type = "button";
      stop.className = "stop";
      stop.textContent = "\u2715"; // ✕
      stop.title = "Cancel";
      stop.setAttribute("aria-label", "Cancel " + where);
      li.appendChild(name); li.appendChild(state); li.appendChild(stop); li.appendChild(bar);
      list.appendChild(li);
      allBytes += f.size;
      if (batch.resumed && wasSent(batch, fk)) {
        // Sent before the reload, in this set: not again.
        stop.hidden = true;
        bar.value = 1;
        state.textContent = "sent before · " + size(f.size);
        sent++; doneBytes += f.size;
        ended(batch);
        continue;
      }
      var job = { file: f, path: files[i].path || "", key: fk, batch: batch, state: state, bar: bar, stop: stop,
                  uncounted: !!going[fk], folder: folder };
      stop.addEventListener("click", cancel.bind(null, job));
      queue.push(job);
    }
    totalBar.hidden = false;
    show(0);
    next();
  }

  // uploadsKept is the fingerprints (fileKey) of the uploads tus-js-client
  // keeps to resume, in localStorage under "tus::<fingerprint>::<random>".
  function uploadsKept() {
    var out = {};
    try {
      for (var i = 0; i < localStorage.length; i++) {
        var k = localStorage.key(i);
        if (k && k.indexOf("tus::") === 0) out[k.slice(5, k.lastIndexOf("::"))] = true;
      }
    } catch (e) { /* no storage: nothing to resume */ }
    return out;
  }

  // fileKey names a file of a set: its place, size and date, on this link
  // (the upload's fingerprint too).
  function fileKey(path, file, folder) {
    return ["ferry", (path || file.name) + (folder ? "/" : ""), file.size, file.lastModified, endpoint].join("|");
  }

  // hash is a short digest of s (two 32-bit FNV-1a variants) for a
  // storage key: a set of many files has a long list of names.
  function hash(s) {
    var a = 0x811c9dc5, b = 0x01000193;
    for (var i = 0; i < s.length; i++) {
      var c = s.charCodeAt(i);
      a = Math.imul(a ^ c, 16777619);
      b = Math.imul(b ^ c, 2246822519) ^ (b >>> 13);
    }
    return (a >>> 0).toString(16) + (b >>> 0).toString(16);
  }

  // The sets this page began and has not finished, in localStorage (none
  // where the browser keeps no storage: a private window, say): under the
  // set's key its ID and when it began, and a mark under the set's key and
  // a digest of the file for each file of it sent (one small item per
  // file: a set of 10^5 files writes each mark once). A set left for a
  // week is forgotten; where the storage is full, the marks that do not
  // fit are not kept (those files would be sent again).
  var setTTL = 7 * 24 * 3600 * 1000;
  var activeSets = {}; // the keys of the sets going in this page
  function loadSet(key) {
    try {
      var v = JSON.parse(localStorage.getItem(key) || "null");
      if (v && typeof v.id === "string" && /^[0-9a-f]{32}$/.test(v.id) && Date.now() - v.at < setTTL) return v;
    } catch (e) { /* no storage, or not ours */ }
    return null;
  }
  function saveSet(batch) {
    if (!batch.key || batch.resumed) return;
    try {
      localStorage.setItem(batch.key, JSON.stringify({ id: batch.id, at: Date.now() }));
    } catch (e) { /* no storage: a reload starts a new set */ }
  }
  function markSent(batch, fk) {
    if (!batch.key) return;
    try { localStorage.setItem(batch.key + "|" + hash(fk), "1"); } catch (e) { /* full */ }
  }
  function wasSent(batch, fk) {
    try { return localStorage.getItem(batch.key + "|" + hash(fk)) === "1"; } catch (e) { return false; }
  }
  function forgetOldSets() {
    try {
      var sets = {}, marks = [];
      for (var i = 0; i < localStorage.length; i++) {
        var k = localStorage.key(i);
        if (!k || k.indexOf("ferry-set|") !== 0) continue;
        var parts = k.split("|");
        if (parts.length === 2) sets[k] = loadSet(k) !== null;
        else marks.push(k);
      }
      Object.keys(sets).forEach(function (k) { if (!sets[k]) localStorage.removeItem(k); });
      marks.forEach(function (k) {
        if (!sets[k.slice(0, k.lastIndexOf("|"))]) localStorage.removeItem(k);
      });
    } catch (e) { /* no storage */ }
  }
  forgetOldSets();

  // ended counts one file of batch as ended (sent, or not): the set is
  // forgotten with its last file, so the same files picked again after
  // that are sent again, as a new set.
  function ended(batch) {
    if (--batch.left > 0 || !batch.key) return;
    delete activeSets[batch.key];
    try {
      localStorage.removeItem(batch.key);
      batch.keys.forEach(function (fk) { localStorage.removeItem(batch.key + "|" + hash(fk)); });
    } catch (e) { /* no storage */ }
  }

  // randomID is 32 random hex digits.
  function randomID() {
    var b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.prototype.map.call(b, function (x) { return (x < 16 ? "0" : "") + x.toString(16); }).join("");
  }

  // plain is a FileList as picked: files by themselves, or a folder's
  // files with their webkitRelativePath.
  function plain(fileList) {
    var out = [];
    for (var i = 0; i < fileList.length; i++) {
      var f = fileList[i];
      out.push({ file: f, path: f.webkitRelativePath && f.webkitRelativePath.indexOf("/") > 0 ? f.webkitRelativePath : "" });
    }
    return out;
  }

  // walk collects the files below a dropped entry (a file or a folder,
  // its folders read to the end: a reader gives at most 100 at a time),
  // and the folders that hold nothing, then calls done(). Only those are
  // sent of the empty folders: making "a/b/c" on the device makes "a/b"
  // and "a" (and the files' paths make their folders). Before, no empty
  // folder was sent, and the page counted them as not sent.
  function walk(entry, out, done) {
    if (entry.isFile) {
      entry.file(function (f) {
        var p = entry.fullPath.replace(/^\//, "");
        out.push({ file: f, path: p.indexOf("/") > 0 ? p : "" });
        done();
      }, function () { unreadable(entry.fullPath); done(); });
      return;
    }
    var reader = entry.createReader(), children = [];
    (function more() {
      reader.readEntries(function (batch) {
        if (batch.length) {
          children = children.concat(Array.prototype.slice.call(batch));
          more();
          return;
        }
        var left = children.length;
        if (!left) {
          var p = entry.fullPath.replace(/^\//, "");
          out.push({ file: new File([], entry.name, { lastModified: 0 }), path: p, folder: true });
          done();
          return;
        }
        children.forEach(function (c) {
          walk(c, out, function () { if (--left === 0) done(); });
        });
      }, function () { unreadable(entry.fullPath); done(); });
    })();
  }

  // unreadable lists what the browser could not read as not sent.
  function unreadable(p) {
    var li = document.createElement("li");
    var name = document.createElement("span");
    name.className = "name";
    name.textContent = p.replace(/^\//, "");
    var state = document.createElement("span");
    state.className = "state error";
    state.textContent = "not sent: this browser could not read it";
    li.appendChild(name); li.appendChild(state);
    list.appendChild(li);
    failed++;
  }

  function show(current) {
    if (!allBytes) {
      // Nothing left to send (every file failed): no "0 B of 0 B".
      totalBar.hidden = true;
      total.textContent = "";
      return;
    }
    totalBar.hidden = false;
    var now = (doneBytes + current) / allBytes;
    totalBar.value = now;
    var text = size(doneBytes + current) + " of " + size(allBytes);
    if (speedMark && performance.now() > speedMark.t + 500) {
      var s = (doneBytes + current - speedMark.b) / ((performance.now() - speedMark.t) / 1000);
      if (s > 0) text += " · " + size(s) + "/s";
    }
    total.textContent = text;
  }

  // cancel stops one file: one waiting is not sent; the one on its way is
  // aborted and its upload ended on the device (tus terminate), which then
  // counts it as cancelled in the browser. The rest go on.
  function cancel(job) {
    if (job.over) return;
    var at = queue.indexOf(job);
    if (at >= 0) {
      queue.splice(at, 1);
    } else if (job.upload) {
      job.upload.abort(true).catch(function () { /* the device had it gone already */ });
    } else {
      return;
    }
    job.over = true;
    job.stop.hidden = true;
    job.bar.hidden = true;
    job.state.textContent = "not sent: cancelled";
    failed++; allBytes -= job.file.size;
    ended(job.batch);
    show(0);
    if (at < 0) { running = false; next(); } else if (!running) { next(); }
  }

  function next() {
    if (running) return;
    var job = queue.shift();
    if (!job) { finish(); return; }
    running = true;
    send(job);
  }

  function finish() {
    if (sent + failed + foldersSent === 0) return;
    var msg = sent + (sent === 1 ? " file" : " files");
    if (foldersSent) msg += " and " + foldersSent + (foldersSent === 1 ? " empty folder" : " empty folders");
    msg += " sent to " + device;
    if (failed) msg += "; " + failed + (failed === 1 ? " file was" : " files were") + " not sent";
    if (linkGone) msg += ". This link has ended: ask for a new one to send more";
    status.textContent = msg + ".";
  }

  function reason(err, job) {
    if (job && job.cancelledThere) return "cancelled on " + device;
    var res = err && err.originalResponse;
    if (!res) return "the receiving device cannot be reached";
    var st = res.getStatus();
    if (st === 410) return whyEnded(res);
    if (linkUnknown(res)) return device + " no longer has this link (Ferry was restarted there, or the link was stopped)";
    var body = (res.getBody && res.getBody()) || "";
    if (body && body.charAt(0) !== "<") return body.replace(/^ERR_[A-Z_]+: /, "").trim();
    return "the receiving device refused it (" + st + ")";
  }

  // whyEnded says why the link ended, as the device's 410 says it
  // (its Ferry-Link-Ended header).
  function whyEnded(res) {
    switch (res.getHeader("Ferry-Link-Ended")) {
      case "expired": return "this link expired";
      case "stopped": return "this link was stopped on " + device;
      case "closed": return "Ferry was closed on " + device;
    }
    return "this link has ended";
  }

  // linkUnknown says whether an answer is the device's "no such link"
  // page: its Ferry was restarted (links end when it quits) or forgot the
  // link, and nothing more can be sent through it. The 404s of uploads the
  // link has are tus's, whose bodies begin with their code (ERR_...).
  function linkUnknown(res) {
    var body = (res.getBody && res.getBody()) || "";
    return res.getStatus() === 404 && body.indexOf("ERR_") !== 0;
  }

  // final says whether an answer is the receiving device's last word on
  // a file, not to retry: the link ended (410), it ran out of space (507),
  // it could not save it (ERR_SAVE), or it refused it (4xx; not 409 and
  // 423, which a retry gets past, nor tusd's 400 ERR_UPLOAD_INTERRUPTED:
  // another request took the upload over, another tab of this browser
  // that picked the same file, and this one then finds where it stands). A
  // lost connection and other errors are retried (tus resumes from the
  // device's offset).
  function final(err) {
    var res = err && err.originalResponse;
    if (!res) return false;
    var st = res.getStatus();
    var body = (res.getBody && res.getBody()) || "";
    if (body.indexOf("ERR_UPLOAD_INTERRUPTED") === 0) return false;
    return st === 410 || st === 507 || body.indexOf("ERR_SAVE") === 0 ||
      (st >= 400 && st < 500 && st !== 409 && st !== 423);
  }

  // stopAll ends the files still waiting with why (the link ended, the
  // device went away: each would wait minutes to fail the same way);
  // after the link ended nothing more can be picked.
  function stopAll(why, linkEnded) {
    var job;
    while ((job = queue.shift())) {
      job.over = true;
      job.stop.hidden = true;
      job.state.textContent = "not sent: " + why;
      job.state.classList.add("error");
      job.bar.hidden = true;
      failed++; allBytes -= job.file.size;
      ended(job.batch);
    }
    if (linkEnded) {
      input.disabled = true;
      if (folderInput) folderInput.disabled = true;
      drop.classList.add("ended");
      linkGone = true;
    }
  }

  // forgetUpload drops what tus-js-client keeps to resume the upload of
  // a file (fingerprint fk): the same file picked again is then sent anew.
  function forgetUpload(fk) {
    var store = tus.defaultOptions && tus.defaultOptions.urlStorage;
    if (!store) return;
    store.findUploadsByFingerprint(fk).then(function (ups) {
      ups.forEach(function (u) { store.removeUpload(u.urlStorageKey); });
    }).catch(function () { /* no storage */ });
  }

  // savedAs shows under a file sent the name the device saved it under,
  // where that is not the name it was sent with (numbered beside a file of
  // that name, changed by Windows's rules, cut to fit): the device's
  // answer that finished the upload says it, percent-encoded, in its
  // Ferry-Saved-As header. Set with textContent: no markup renders.
  function savedAs(job, res) {
    var v = res && res.getHeader && res.getHeader("Ferry-Saved-As");
    if (!v) return;
    try { v = decodeURIComponent(v); } catch (e) { return; }
    var li = job.state.parentNode;
    if (!li) return;
    var saved = document.createElement("span");
    saved.className = "saved";
    saved.textContent = "saved as " + v;
    li.appendChild(saved);
  }

  function send(job) {
    var f = job.file;
    var started = false;
    var meta = { filename: f.name, filetype: f.type || "application/octet-stream", lastmodified: String(f.lastModified || "") };
    if (job.path) meta.relativepath = job.path;
    if (job.folder) meta.folder = "1"; // made there, with the folders above it
    if (!job.uncounted) {
      // (One its set does not count, sent anew where its upload is gone,
      // goes as a file of its own.)
      meta.batch = job.batch.id;
      meta.batchfiles = String(job.batch.files);
      meta.batchbytes = String(job.batch.bytes);
      if (job.batch.folders) meta.batchfolders = String(job.batch.folders);
      if (job.batch.top) meta.batchtop = job.batch.top;
    }
    var upload = job.upload = new tus.Upload(f, {
      endpoint: endpoint,
      chunkSize: chunk,
      // The file's place in its folder too: two files of one name, size
      // and date in two folders are two uploads, each resumed as itself.
      fingerprint: function (file) {
        return Promise.resolve(job.key);
      },
      retryDelays: [0, 1000, 2000, 3000, 5000, 5000, 10000, 10000, 10000, 20000, 20000, 30000],
      onShouldRetry: function (err) {
        return !job.cancelledThere && !final(err) && (typeof navigator === "undefined" || navigator.onLine !== false);
      },
      removeFingerprintOnSuccess: true,
      // An upload the device cancelled (its answers say so, a HEAD's
      // too): stop here. Left to itself, tus-js-client answers a HEAD's
      // refusal by starting the file again as a new upload.
      onAfterResponse: function (req, res) {
        if (res.getHeader("Ferry-Upload") === "cancelled") {
          job.cancelledThere = true;
          throw new Error("cancelled on the receiving device");
        }
      },
      metadata: meta,
      onProgress: function (bytes, all) {
        if (!started) {
          started = true;
          speedMark = speedMark || { t: performance.now(), b: doneBytes + bytes };
        }
        job.bar.value = all ? bytes / all : 1;
        job.state.textContent = size(bytes) + " of " + size(all);
        show(bytes);
      },
      onSuccess: function (payload) {
        if (job.over) return;
        job.over = true;
        job.stop.hidden = true;
        job.bar.value = 1;
        job.state.textContent = "sent · " + (job.folder ? "empty folder" : size(f.size));
        savedAs(job, payload && payload.lastResponse);
        if (job.folder) foldersSent++; else sent++;
        doneBytes += f.size;
        markSent(job.batch, job.key);
        ended(job.batch);
        show(0);
        running = false; next();
      },
      onError: function (err) {
        if (job.over) return;
        job.over = true;
        job.stop.hidden = true;
        var why = reason(err, job);
        if (job.cancelledThere) forgetUpload(job.key);
        job.state.textContent = "not sent: " + why;
        job.state.classList.add("error");
        job.bar.hidden = true;
        failed++; allBytes -= f.size;
        ended(job.batch);
        var res = err && err.originalResponse;
        if (!job.cancelledThere && (!res || res.getStatus() === 410 || linkUnknown(res))) stopAll(why, !!res);
        show(0);
        running = false; next();
      }
    });
    upload.findPreviousUploads().then(function (previous) {
      if (job.over) return; // cancelled meanwhile
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
    add(plain(input.files));
    input.value = "";
  });
  if (folderInput) {
    if ("webkitdirectory" in folderInput) {
      folderInput.addEventListener("change", function () {
        add(plain(folderInput.files));
        folderInput.value = "";
      });
    } else {
      // This browser picks no folders: its button is not offered.
      var label = document.querySelector('label[for="folder"]');
      if (label) label.hidden = true;
      folderInput.hidden = true;
    }
  }
  drop.addEventListener("dragover", function (e) { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", function () { drop.classList.remove("over"); });
  drop.addEventListener("drop", function (e) {
    e.preventDefault();
    drop.classList.remove("over");
    var dt = e.dataTransfer;
    if (!dt) return;
    // Entries, read now (they are gone once the event returns): a folder
    // dropped is walked for its files; without entries, files only.
    var entries = [];
    if (dt.items && dt.items.length && dt.items[0].webkitGetAsEntry) {
      for (var i = 0; i < dt.items.length; i++) {
        var en = dt.items[i].kind === "file" && dt.items[i].webkitGetAsEntry();
        if (en) entries.push(en);
      }
    }
    if (!entries.length) {
      if (dt.files) add(plain(dt.files));
      return;
    }
    var out = [], left = entries.length;
    status.textContent = "";
    entries.forEach(function (en) {
      walk(en, out, function () {
        if (--left === 0) {
          if (out.length) add(out); else finish();
        }
      });
    });
  });
})();

// The review desk's and the queue's keys (dashboard.md, Keyboard). A static file: the
// Content-Security-Policy runs no inline script. Without JavaScript every key's button is
// still there to press; the keys only press them.
//
//   j / k      next / previous conflict (desk: Skip / back to the last one skipped)
//   1 2 3      the "… holds" button of the first / second / third side shown, once a reason is given
//   Ctrl+Enter Resolve with what is ticked (also ⌘+Enter); works while typing
//   s          Skip (desk)          u   Undo the last resolution          ?   these keys
//   Esc        leave the field being typed in; works while typing
(function () {
  "use strict";

  var ITEM = ".desk-conflict, .queue-item";
  var lastItem = null; // the queue item last holding the focus, for keys pressed after Esc

  function typing(el) {
    if (!el || el === document.body) return false;
    if (el.isContentEditable) return true;
    if (el.tagName === "TEXTAREA" || el.tagName === "SELECT") return true;
    return el.tagName === "INPUT" && !/^(checkbox|radio|button|submit|reset)$/.test(el.type);
  }

  function current() {
    var desk = document.querySelector(".desk-conflict");
    if (desk) return desk;
    var active = document.activeElement && document.activeElement.closest(ITEM);
    if (active) return active;
    if (lastItem && document.body.contains(lastItem)) return lastItem;
    return document.querySelector(".queue-item");
  }

  function firstControl(item) {
    return item && item.querySelector("textarea, input:not([type=hidden]), select, button");
  }

  function hint(text) {
    var box = document.getElementById("key-hint");
    if (box) box.textContent = text;
  }

  function press(button) {
    if (!button || button.disabled) return false;
    // A click, not form.requestSubmit(button): htmx sends a submit button's name=value (the
    // "… holds" side) only for a button it saw clicked; the click validates the form all the same.
    button.click();
    return true;
  }

  function holds(item, n) {
    var button = item && item.querySelector('[data-holds="' + n + '"]');
    if (!button) { hint("There is no side " + n + " here."); return; }
    var reason = button.form.querySelector("textarea[name=reason]");
    if (reason && !reason.value.trim()) {
      hint("Give a reason first, then press " + n + " (Esc leaves the field).");
      reason.focus();
      return;
    }
    press(button);
  }

  function move(step) {
    if (document.querySelector(".desk-conflict") || document.getElementById("desk")) {
      // The desk shows one conflict: next is Skip, previous the last one skipped.
      var button = document.querySelector(step > 0 ? "[data-key=skip]" : "[data-key=back]");
      if (!press(button)) hint(step > 0 ? "No conflict to skip." : "Nothing skipped to go back to.");
      return;
    }
    var items = Array.prototype.slice.call(document.querySelectorAll(".queue-item"));
    if (!items.length) return;
    var at = items.indexOf(current());
    var next = items[Math.min(items.length - 1, Math.max(0, at + step))];
    var control = firstControl(next) || next.querySelector("a[href]");
    if (control) { control.focus(); next.scrollIntoView({ block: "nearest" }); }
  }

  function help() {
    var dialog = document.getElementById("keys");
    if (!dialog) return;
    if (dialog.open) dialog.close(); else dialog.showModal();
  }

  document.addEventListener("focusin", function (event) {
    var item = event.target.closest && event.target.closest(".queue-item");
    if (item) lastItem = item;
  });

  document.addEventListener("click", function (event) {
    if (event.target.closest("[data-key=help]")) help();
  });

  document.addEventListener("keydown", function (event) {
    var el = document.activeElement;
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      var item = (el && el.closest && el.closest(ITEM)) || current();
      if (press(item && item.querySelector("[data-key=resolve]"))) event.preventDefault();
      return;
    }
    if (event.key === "Escape") {
      var dialog = document.getElementById("keys");
      if (dialog && dialog.open) return; // the dialog closes itself
      if (typing(el)) { el.blur(); event.preventDefault(); }
      return;
    }
    if (typing(el) || event.ctrlKey || event.metaKey || event.altKey) return;
    var open = document.getElementById("keys");
    if (open && open.open && event.key !== "?") return;
    switch (event.key) {
      case "?": help(); break;
      case "j": move(1); break;
      case "k": move(-1); break;
      case "1": case "2": case "3": holds(current(), event.key); break;
      case "s": if (!press(document.querySelector("[data-key=skip]"))) hint("Skip is on the review desk."); break;
      case "u": if (!press(document.querySelector("[data-key=undo]"))) hint("No resolution to undo here."); break;
      default: return;
    }
    event.preventDefault();
  });

  // After an in-place Resolve or Skip, the focus goes to the next conflict's first control: on
  // the desk its reason; on the queue the item now where the resolved one was.
  var from = null; // where the last htmx request came from: "desk", or a queue item's place
  document.addEventListener("htmx:beforeRequest", function (event) {
    var source = event.target;
    if (!source.closest) { from = null; return; }
    if (source.closest("#desk")) { from = "desk"; return; }
    var item = source.closest(".queue-item");
    from = item ? Array.prototype.indexOf.call(document.querySelectorAll(".queue-item"), item) : null;
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (from === "desk") {
      var desk = document.getElementById("desk");
      var first = document.getElementById("desk-reason") || (desk && desk.querySelector("button, a[href]"));
      if (first) first.focus();
    } else if (typeof from === "number") {
      var items = document.querySelectorAll(".queue-item");
      if (items.length) {
        var control = firstControl(items[Math.min(from, items.length - 1)]);
        if (control) control.focus();
      }
    }
    from = null;
  });
})();

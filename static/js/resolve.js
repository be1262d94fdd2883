// The resolve forms' `holds` field (dashboard.md, The resolution deposit): pre-filled with what
// the kept deposits say, as they are ticked, or with a side's when its "… holds" button is
// pressed, until the reviewer writes their own words there. The server fills an empty `holds`
// the same way (deposits.domain.review.claim_that_holds: each content once, one per line), so a
// pre-filled value is not sent: the deposit is the same, and a form shown again after a refusal
// never mistakes an old pre-fill for the reviewer's words. Without JavaScript nothing changes
// but the preview.
(function () {
  "use strict";

  function holdsField(form) {
    return form && form.querySelector && form.querySelector("textarea[name=holds]");
  }

  // Pre-filled here (or empty), not written by the reviewer.
  function prefilled(field) {
    return field.value.trim() === "" || field.value === field.dataset.filled;
  }

  function contentOf(tick) {
    var label = tick.id && document.querySelector('label[for="' + tick.id + '"]');
    return label ? label.textContent.trim() : "";
  }

  function fill(form, ticks) {
    var field = holdsField(form);
    if (!field || !prefilled(field)) return;
    var said = [];
    Array.prototype.forEach.call(ticks, function (tick) {
      var content = contentOf(tick);
      if (content && said.indexOf(content) < 0) said.push(content);
    });
    field.value = field.dataset.filled = said.join("\n");
  }

  function fillFromTicks(form) {
    fill(form, form.querySelectorAll("input[name=keep]:checked"));
  }

  document.addEventListener("change", function (event) {
    var tick = event.target;
    if (tick.matches && tick.matches("input[type=checkbox][name=keep]") && tick.form) fillFromTicks(tick.form);
  });

  // Before the form is sent (a click's default action comes after its listeners).
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[name=side]");
    var side = button && button.form && button.closest(".side");
    if (side) fill(button.form, side.querySelectorAll("input[name=keep]"));
  });

  // A disabled field is not sent, by the browser or by htmx; captured before htmx sends the form.
  document.addEventListener("submit", function (event) {
    var field = holdsField(event.target);
    if (field && field.value.trim() !== "" && prefilled(field)) field.disabled = true;
  }, true);

  function enableAll() {
    Array.prototype.forEach.call(document.querySelectorAll("textarea[name=holds]:disabled"), function (field) {
      field.disabled = false;
    });
  }

  // A form shown again with ticks (after a refusal) shows what they say; a request that swapped
  // nothing in, or a page come back to from history, has its field back.
  function adopt() {
    enableAll();
    Array.prototype.forEach.call(document.querySelectorAll("form"), function (form) {
      var field = holdsField(form);
      if (field && field.value.trim() === "") fillFromTicks(form);
    });
  }

  document.addEventListener("DOMContentLoaded", adopt);
  document.addEventListener("htmx:afterSettle", adopt);
  document.addEventListener("htmx:afterRequest", enableAll);
  window.addEventListener("pageshow", enableAll);
})();

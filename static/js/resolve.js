// The resolve forms' `holds` field (dashboard.md, The resolution deposit): pre-filled with what
// the kept deposits say, as they are ticked, or with a side's when its "… holds" button is
// pressed, until the reviewer writes their own words there. The server fills an empty `holds`
// the same way (deposits.domain.review.claim_that_holds: each content once, one per line), so
// without JavaScript the deposit written is the same; this only shows it before it is sent.
(function () {
  "use strict";

  function holdsField(form) {
    return form && form.querySelector("textarea[name=holds]");
  }

  // The reviewer's own words: anything but empty or what was last filled in here.
  function written(field) {
    return field.value.trim() !== "" && field.value !== field.dataset.filled;
  }

  function contentOf(tick) {
    var label = tick.id && document.querySelector('label[for="' + tick.id + '"]');
    return label ? label.textContent.trim() : "";
  }

  function fill(form, ticks) {
    var field = holdsField(form);
    if (!field || written(field)) return;
    var said = [];
    Array.prototype.forEach.call(ticks, function (tick) {
      var content = contentOf(tick);
      if (content && said.indexOf(content) < 0) said.push(content);
    });
    field.value = field.dataset.filled = said.join("\n");
  }

  document.addEventListener("change", function (event) {
    var tick = event.target;
    if (!tick.matches || !tick.matches("input[type=checkbox][name=keep]") || !tick.form) return;
    fill(tick.form, tick.form.querySelectorAll("input[name=keep]:checked"));
  });

  // Before the form is sent (a click's default action comes after its listeners).
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[name=side]");
    var side = button && button.form && button.closest(".side");
    if (side) fill(button.form, side.querySelectorAll("input[name=keep]"));
  });
})();

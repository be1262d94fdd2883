// A tier's Save looks destructive, and asks first, only once its ceiling differs from the saved
// one and the change would rebuild beliefs: beside an unchanged value it does nothing. A static
// file (the Content-Security-Policy runs no inline script); delegated, so rows htmx swaps in work
// too. Without JavaScript Save stays plain and saves at once, as every form does there.
document.addEventListener("input", function (event) {
  var field = event.target.closest && event.target.closest("input[data-saved]");
  var button = field && field.form && field.form.querySelector("button[data-rebuilds]");
  if (!button) return;
  var changed = field.value.trim() !== "" && Number(field.value) !== Number(field.dataset.saved);
  button.classList.toggle("danger", changed);
  if (changed) button.dataset.confirm = button.dataset.rebuilds;
  else delete button.dataset.confirm;
});

// The Copy button beside a secret shown once (beliefs' provenance page). Without JavaScript the
// button stays hidden (.js-only) and the secret is plain text to select. Delegated, so a secret
// that htmx swaps in later works too.
document.documentElement.classList.add("js");
document.addEventListener("click", function (event) {
  var button = event.target.closest("button[data-copy]");
  var source = button && document.getElementById(button.dataset.copy);
  if (!source) return;
  var range = document.createRange();
  range.selectNodeContents(source);
  var selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  var copied = function () { button.textContent = "Copied"; };
  var selected = function () { button.textContent = "Selected: press Ctrl+C"; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(source.textContent).then(copied, selected);
  } else {
    try { (document.execCommand("copy") ? copied : selected)(); } catch (error) { selected(); }
  }
});

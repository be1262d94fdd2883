// A button with data-confirm="question" asks before its form is sent (Retract, Erase, Revoke).
// A static file, not an inline onclick, because the Content-Security-Policy runs no inline
// script. Without JavaScript the form is sent without asking, as every page works without it.
document.addEventListener("click", function (event) {
  var button = event.target.closest("button[data-confirm]");
  if (button && !window.confirm(button.dataset.confirm)) event.preventDefault();
});

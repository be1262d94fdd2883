// Starts the packaged Swagger UI on /api/v1/docs (templates/ninja/swagger.html). A static file,
// as the Content-Security-Policy runs no inline script. Deep links are off: Swagger UI draws
// them as links inside each operation's button, which no keyboard or screen reader can use.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  var config = JSON.parse(document.getElementById("swagger-settings").textContent);
  config.dom_id = "#swagger-ui";
  // The document is in the page (templates/ninja/swagger.html): no second request for it.
  var embedded = document.getElementById("openapi-spec");
  if (embedded) {
    config.spec = JSON.parse(embedded.textContent);
    delete config.url;
  }
  config.deepLinking = false;
  config.presets = [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset];
  config.onComplete = function () {
    root.setAttribute("aria-busy", "false");
  };
  if (root.dataset.apiCsrf && root.dataset.csrfToken) {
    config.requestInterceptor = function (request) {
      request.headers["X-CSRFToken"] = root.dataset.csrfToken;
      return request;
    };
  }
  root.setAttribute("aria-busy", "true");
  SwaggerUIBundle(config);
})();

/*
 * st.js: browser-side card tokenisation for the gwkit sandbox (the legacy "v1" interface, 4.9).
 * Plain JavaScript, no build step. Load it with a script element or through an AMD loader:
 *
 *   <form id="st-payment" action="/pay" method="post">
 *     <div id="st-message"></div>
 *     <input data-st-field="pan">            <!-- card inputs carry no name attribute -->
 *     <input data-st-field="expirymonth"> <input data-st-field="expiryyear">
 *     <input data-st-field="securitycode">
 *     <input name="orderreference" value="order-1">
 *   </form>
 *   <script src="{base_url}/js/st.js"></script>
 *   <script>new SecureTrading.Standard({sitereference: "test_site12345", locale: "en_gb"});</script>
 *
 * On submit the card inputs are checked in the browser (Luhn, expiry in the future, security
 * code length by scheme); problems are shown in the message element and the inputs get the
 * class st-error. Valid details are sent to {base_url}/json/ as a CACHETOKENISE request, without
 * credentials; the token comes back, is added to the form as a hidden input named cachetoken,
 * and the form is submitted to its action (or submitFormCallback is called instead).
 */
(function (root, factory) {
  "use strict";
  var script = document.currentScript || findScript();
  var library = factory(root, baseUrlOf(script));
  if (typeof root.define === "function" && root.define.amd) {
    root.define([], function () { return library; });
  }
  root.SecureTrading = library;

  function findScript() {
    var scripts = document.getElementsByTagName("script");
    for (var i = scripts.length - 1; i >= 0; i--) {
      if (/\/js\/st\.js(\?|#|$)/.test(scripts[i].src)) { return scripts[i]; }
    }
    return null;
  }

  function baseUrlOf(element) {
    var src = element && element.src ? element.src : "";
    return src.replace(/[?#].*$/, "").replace(/\/js\/st\.js$/, "");
  }
}(window, function (window, baseUrl) {
  "use strict";

  // Field rules. The sandbox replaces this object with values taken from gwkit's spec tables
  // when it serves the file; the literal below is the same data, for a copy opened directly.
  var RULES = /*gwkit:rules*/{"panMinLength": 12, "panMaxLength": 19, "securitycodeLength": 3,
    "securitycodeLengthByPrefix": {"34": 4, "37": 4}}/*gwkit:end*/;

  var CARD_FIELDS = ["pan", "expirymonth", "expiryyear", "securitycode"];

  var MESSAGES = {
    en_gb: {
      pan: "Invalid card number",
      expirymonth: "Invalid expiry month",
      expiryyear: "Invalid expiry year",
      expired: "The card has expired",
      securitycode: "Invalid security code",
      connection: "The payment could not be sent: no connection to the payment gateway. Please try again.",
      gateway: "The payment details could not be accepted"
    },
    fr_fr: {
      pan: "Numéro de carte invalide",
      expirymonth: "Mois d'expiration invalide",
      expiryyear: "Année d'expiration invalide",
      expired: "La carte a expiré",
      securitycode: "Code de sécurité invalide",
      connection: "Le paiement n'a pas pu être envoyé : pas de connexion à la passerelle de paiement. Veuillez réessayer.",
      gateway: "Les données de paiement n'ont pas pu être acceptées"
    },
    de_de: {
      pan: "Ungültige Kartennummer",
      expirymonth: "Ungültiger Ablaufmonat",
      expiryyear: "Ungültiges Ablaufjahr",
      expired: "Die Karte ist abgelaufen",
      securitycode: "Ungültiger Sicherheitscode",
      connection: "Die Zahlung konnte nicht gesendet werden: keine Verbindung zum Zahlungsgateway. Bitte versuchen Sie es erneut.",
      gateway: "Die Zahlungsdaten konnten nicht akzeptiert werden"
    }
  };

  function luhnOk(digits) {
    var total = 0;
    for (var i = 0; i < digits.length; i++) {
      var digit = digits.charCodeAt(digits.length - 1 - i) - 48;
      if (i % 2 === 1) { digit *= 2; if (digit > 9) { digit -= 9; } }
      total += digit;
    }
    return total % 10 === 0;
  }

  function securitycodeLength(pan) {
    var best = "", table = RULES.securitycodeLengthByPrefix;
    for (var prefix in table) {
      if (Object.prototype.hasOwnProperty.call(table, prefix) &&
          pan.indexOf(prefix) === 0 && prefix.length > best.length) { best = prefix; }
    }
    return best ? table[best] : RULES.securitycodeLength;
  }

  // The card values as the gateway wants them, and the problems found: [{field, key}].
  function checkCard(values, now) {
    var problems = [], card = {};
    var pan = (values.pan || "").replace(/[\s-]/g, "");
    if (!/^[0-9]+$/.test(pan) || pan.length < RULES.panMinLength || pan.length > RULES.panMaxLength ||
        !luhnOk(pan)) {
      problems.push({field: "pan", key: "pan"});
    }
    card.pan = pan;
    var month = (values.expirymonth || "").trim(), year = (values.expiryyear || "").trim();
    var monthOk = /^[0-9]{1,2}$/.test(month) && +month >= 1 && +month <= 12;
    var yearOk = /^([0-9]{2}|[0-9]{4})$/.test(year);
    if (!monthOk) { problems.push({field: "expirymonth", key: "expirymonth"}); }
    if (!yearOk) { problems.push({field: "expiryyear", key: "expiryyear"}); }
    if (monthOk && yearOk) {
      card.expirymonth = (month.length === 1 ? "0" : "") + month;
      card.expiryyear = year.length === 2 ? "20" + year : year;
      var thisYear = now.getFullYear(), thisMonth = now.getMonth() + 1;
      if (+card.expiryyear < thisYear) {
        problems.push({field: "expiryyear", key: "expired"});
      } else if (+card.expiryyear === thisYear && +card.expirymonth < thisMonth) {
        problems.push({field: "expirymonth", key: "expired"});
      }
    }
    if ("securitycode" in values) {
      var code = (values.securitycode || "").trim();
      if (!/^[0-9]+$/.test(code) || code.length !== securitycodeLength(pan)) {
        problems.push({field: "securitycode", key: "securitycode"});
      }
      card.securitycode = code;
    }
    return {card: card, problems: problems};
  }

  function Standard(options) {
    if (!(this instanceof Standard)) { return new Standard(options); }
    options = options || {};
    if (!options.sitereference) {
      throw new Error("SecureTrading.Standard: the sitereference option is required");
    }
    this.sitereference = options.sitereference;
    this.locale = MESSAGES.hasOwnProperty(options.locale) ? options.locale : "en_gb";
    this.formId = options.formId || "st-payment";
    this.messageId = options.messageId || "st-message";
    this.submitFormCallback = options.submitFormCallback || null;
    this.errorCallback = options.errorCallback || null;
    this.validateRequestObjectCallback = options.validateRequestObjectCallback || null;
    this.gatewayUrl = baseUrl + "/json/";
    this.sending = false;
    var self = this;
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", function () { self.attach(); });
    } else {
      this.attach();
    }
  }

  Standard.prototype.attach = function () {
    var form = document.getElementById(this.formId), self = this;
    if (!form) {
      throw new Error("SecureTrading.Standard: no form with id " + this.formId);
    }
    this.form = form;
    this.cardInputs().forEach(function (input) {
      if (input.hasAttribute("name") && window.console) {
        window.console.warn("st.js: the card input " + input.getAttribute("data-st-field") +
                            " has a name attribute, so its value is posted to the merchant server");
      }
    });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      self.tokenise();
    });
  };

  Standard.prototype.cardInputs = function () {
    var found = this.form.querySelectorAll("[data-st-field]"), inputs = [];
    for (var i = 0; i < found.length; i++) {
      if (CARD_FIELDS.indexOf(found[i].getAttribute("data-st-field")) >= 0) { inputs.push(found[i]); }
    }
    return inputs;
  };

  Standard.prototype.cardValues = function () {
    var values = {};
    this.cardInputs().forEach(function (input) { values[input.getAttribute("data-st-field")] = input.value; });
    return values;
  };

  Standard.prototype.tokenise = function () {
    if (this.sending) { return; }
    this.clearMessages();
    var checked = checkCard(this.cardValues(), new Date()), self = this;
    var problems = checked.problems.map(function (p) {
      return {field: p.field, message: self.text(p.key)};
    });
    if (this.validateRequestObjectCallback &&
        this.validateRequestObjectCallback({valid: problems.length === 0, errors: problems}) === false) {
      return;
    }
    if (problems.length) {
      this.showProblems(problems);
      return;
    }
    var request = {requesttypedescriptions: ["CACHETOKENISE"], sitereference: this.sitereference};
    for (var name in checked.card) {
      if (checked.card.hasOwnProperty(name)) { request[name] = checked.card[name]; }
    }
    this.send({version: "1.00", request: [request]});
  };

  Standard.prototype.send = function (envelope) {
    var self = this, xhr = new XMLHttpRequest();
    this.sending = true;
    xhr.open("POST", this.gatewayUrl, true);
    xhr.setRequestHeader("Content-Type", "application/json");
    xhr.setRequestHeader("Accept", "application/json");
    xhr.timeout = 30000;
    xhr.onload = function () {
      self.sending = false;
      var answer = null;
      try { answer = JSON.parse(xhr.responseText); } catch (ignored) { answer = null; }
      if (xhr.status !== 200 || !answer || !answer.response || !answer.response.length) {
        self.connectionFailed(answer);
      } else {
        self.answered(answer);
      }
    };
    xhr.onerror = xhr.ontimeout = function () {
      self.sending = false;
      self.connectionFailed(null);
    };
    xhr.send(JSON.stringify(envelope));
  };

  Standard.prototype.answered = function (envelope) {
    var record = envelope.response[0];
    if (record.errorcode !== "0" || !record.cachetoken) {
      this.gatewayRefused(envelope, record);
      return;
    }
    if (this.submitFormCallback) {
      this.submitFormCallback(responseArgument(envelope));
      return;
    }
    var hidden = this.form.querySelector("input[name=cachetoken]");
    if (!hidden) {
      hidden = document.createElement("input");
      hidden.type = "hidden";
      hidden.name = "cachetoken";
      this.form.appendChild(hidden);
    }
    hidden.value = record.cachetoken;
    this.form.submit();  // does not fire the submit event again
  };

  Standard.prototype.gatewayRefused = function (envelope, record) {
    var self = this, known = (record.errordata || []).filter(function (name) {
      return CARD_FIELDS.indexOf(name) >= 0;
    });
    var problems = known.length ? known.map(function (name) { return {field: name, message: self.text(name)}; })
      : [{field: null, message: this.text("gateway") + " (" + record.errorcode + " " +
          (record.errormessage || "") + ")"}];
    this.showProblems(problems);
    if (this.errorCallback) { this.errorCallback(responseArgument(envelope)); }
  };

  Standard.prototype.connectionFailed = function (answer) {
    this.showProblems([{field: null, message: this.text("connection")}]);
    if (this.errorCallback) {
      this.errorCallback(responseArgument(answer && answer.response ? answer : {
        response: [{errorcode: "-1", errormessage: "No connection to the payment gateway"}]
      }));
    }
  };

  Standard.prototype.text = function (key) {
    return MESSAGES[this.locale][key];
  };

  Standard.prototype.messageElement = function () {
    var element = document.getElementById(this.messageId);
    if (!element) {
      element = document.createElement("div");
      element.id = this.messageId;
      this.form.insertBefore(element, this.form.firstChild);
    }
    return element;
  };

  Standard.prototype.clearMessages = function () {
    var element = document.getElementById(this.messageId);
    if (element) {
      element.innerHTML = "";
      element.classList.remove("st-error");
    }
    this.cardInputs().forEach(function (input) { input.classList.remove("st-error"); });
  };

  Standard.prototype.showProblems = function (problems) {
    var element = this.messageElement(), inputs = this.cardInputs(), shown = {};
    element.classList.add("st-error");
    problems.forEach(function (problem) {
      var line = document.createElement("div");
      line.className = "st-error-message";
      if (problem.field) { line.setAttribute("data-st-message-for", problem.field); }
      line.textContent = problem.message;
      if (!shown[problem.message + "|" + problem.field]) { element.appendChild(line); }
      shown[problem.message + "|" + problem.field] = true;
      inputs.forEach(function (input) {
        if (input.getAttribute("data-st-field") === problem.field) { input.classList.add("st-error"); }
      });
    });
  };

  // Callbacks get the envelope's response array; it also carries the envelope's own fields,
  // so both data[0].cachetoken and data.response[0].cachetoken work.
  function responseArgument(envelope) {
    var records = (envelope.response || []).slice();
    for (var name in envelope) {
      if (envelope.hasOwnProperty(name)) { records[name] = envelope[name]; }
    }
    return records;
  }

  return {
    Standard: Standard,
    gatewayUrl: baseUrl + "/json/",
    messages: MESSAGES,
    version: "gwkit-st.js-1"
  };
}));

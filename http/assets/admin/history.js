// The audit log of the console: every version of the campaigns, who made it and when,
// and what changed (the server's sentence, and each change it lists); a restore of one
// part of a version (a zone's list, or the segments) or of the whole document, each
// shown against the live version and confirmed before it is made. Uses `$`, `el`,
// `call`, `state`, `campaigns` and `segmentBuilder`.
"use strict";

const auditLog = {
  /** The version a restore is being confirmed for. */
  restoring: null,

  key() {
    return encodeURIComponent(state.account.accessKey);
  },

  async show() {
    const log = await call("GET", "accounts/" + this.key() + "/campaigns/history");
    const rows = log.body.versions.map((v) => {
      const changes = el("ul", { className: "changes" }, (v.changes || []).map((c) => el("li", {}, changeText(c))));
      const row = el(
        "tr",
        { dataset: { version: v.version } },
        el("td", { className: "number" }, v.version),
        el("td", {}, v.at),
        el("td", {}, v.author),
        el("td", {}, el("p", {}, v.summary), changes),
      );
      if (state.role === "editor") {
        const restore = el("button", { type: "button", className: "small", "aria-label": "Restore from version " + v.version }, "Restore…");
        restore.addEventListener("click", () => this.openRestore(v).catch((error) => ($("ch-error").textContent = error.message)));
        row.append(el("td", {}, restore));
      }
      return row;
    });
    $("ch-table").tBodies[0].replaceChildren(...rows);
  },

  /** The restore of `version`: a part to choose, what it would change, and a confirm. */
  async openRestore(version) {
    this.restoring = version.version;
    const zones = state.account.zones.filter((z) => z.type !== "recommender-category" && z.type !== "recommender-brand");
    const named = (version.changes || []).map((c) => c.part)[0];
    const options = [
      ...zones.map((z) => ["zone:" + z.id, "Zone " + z.id + "'s list"]),
      ["segments", "The segments"],
      ["", "The whole document (every zone's list and the segments)"],
    ];
    $("ch-restore-part").replaceChildren(...options.map(([value, label]) => el("option", { value, selected: value === (named || "") }, label)));
    $("ch-restore-version").textContent = version.version;
    $("ch-restore").hidden = false;
    await this.previewRestore();
  },

  async previewRestore() {
    const part = $("ch-restore-part").value;
    const query = "version=" + this.restoring + (part ? "&part=" + encodeURIComponent(part) : "");
    const answer = (await call("GET", "accounts/" + this.key() + "/campaigns/restore?" + query)).body;
    const box = $("ch-restore-diff");
    box.dataset.changes = answer.changes.length;
    box.replaceChildren(
      el("p", {}, answer.changes.length ? "Against the live version, this restore would: " + answer.summary + "." : "The live version already holds this; nothing would change."),
    );
    $("ch-restore-confirm").disabled = !answer.changes.length;
  },

  async confirmRestore() {
    const part = $("ch-restore-part").value;
    const body = { version: this.restoring };
    if (part) body.part = part;
    const answer = (await call("POST", "accounts/" + this.key() + "/campaigns/restore", body)).body;
    $("ch-restore").hidden = true;
    await segmentBuilder.load();
    await campaigns.load(campaigns.zone);
    await this.show();
    $("cz-message").textContent =
      (part ? $("ch-restore-part").selectedOptions[0].textContent : "The whole document") +
      " of version " + this.restoring + " restored as version " + answer.version + ".";
  },
};

/** One change of a version, in words. */
function changeText(change) {
  const where = change.zone ? "zone " + change.zone + ": " : "segments: ";
  const fields = (change.fields || []).join(", ");
  const what = change.campaign !== undefined ? "campaign " + change.campaign : "segment " + change.segment;
  switch (change.change) {
    case "added":
      return where + what + " added" + (change.place ? " at place " + change.place : "");
    case "removed":
      return where + what + " removed" + (change.place ? " from place " + change.place : "");
    case "moved":
      return where + what + " moved from place " + change.from + " to " + change.to;
    case "changed":
      return where + what + " changed (" + fields + ")";
    case "listRemoved":
      return where + "list removed: filled as configured";
    default:
      return where + what + " " + change.change;
  }
}

$("ch-restore-part").addEventListener("change", () => auditLog.previewRestore().catch((error) => ($("ch-error").textContent = error.message)));
$("ch-restore-confirm").addEventListener("click", () =>
  auditLog.confirmRestore().catch((error) => ($("ch-error").textContent = "Not restored: " + error.message)),
);
$("ch-restore-cancel").addEventListener("click", () => ($("ch-restore").hidden = true));

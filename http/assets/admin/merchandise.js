// Merchandising from the preview: the products a previewed zone shows, in order, each
// of which can be pinned at a place (dragged to it, or its place chosen) or hidden from
// the campaign shown (a `productNotIn` filter); either change goes into the zone's draft
// and the preview is shown again. Only a custom campaign's products can be pinned or
// hidden. Uses `$`, `el`, `state` and `campaigns`.
"use strict";

const merchandise = {
  /** The campaign the preview showed, when it is custom content of the list. */
  campaign(id) {
    const campaign = campaigns.list.find((c) => c.id === id);
    return campaign && campaign.content && campaign.content.type === "custom" ? campaign : null;
  },

  /** Shows the previewed items with their controls. */
  show(answer) {
    const shownId = answer.campaigns && answer.campaigns.shown;
    const campaign = shownId ? this.campaign(shownId) : null;
    const editable = Boolean(campaign) && state.role === "editor";
    $("pv-merchandise-note").textContent = editable
      ? "Drag a product to a place to pin it there, or hide it from " + shownId + "; the change goes into the draft."
      : state.role === "editor"
        ? "Only a custom campaign's products can be pinned or hidden here."
        : "";
    const items = answer.items.map((item, at) => {
      const row = el(
        "li",
        { dataset: { id: item.id, place: at + 1 }, draggable: editable ? "true" : null },
        item.image ? el("img", { src: item.image, alt: "", className: "thumb" }) : null,
        el("span", { className: "name" }, item.id + " — " + (item.title || "")),
        el("span", { className: "facts" }, item.displayPrice || ""),
      );
      if (editable) {
        const place = el(
          "select",
          { "aria-label": "Pin " + item.id + " at place" },
          answer.items.map((_, p) => el("option", { value: p + 1, selected: p === at }, "place " + (p + 1))),
        );
        const pin = el("button", { type: "button", className: "small pin" }, "Pin");
        pin.addEventListener("click", () => this.pin(shownId, item.id, Number(place.value)));
        const hide = el("button", { type: "button", className: "small hide" }, "Hide");
        hide.addEventListener("click", () => this.hide(shownId, item.id));
        row.append(place, pin, hide);
        row.addEventListener("dragstart", (event) => event.dataTransfer.setData("text/plain", item.id));
        row.addEventListener("dragover", (event) => event.preventDefault());
        row.addEventListener("drop", (event) => {
          event.preventDefault();
          const dragged = event.dataTransfer.getData("text/plain");
          if (dragged) this.pin(shownId, dragged, at + 1);
        });
      }
      return row;
    });
    $("pv-items").replaceChildren(...items);
  },

  /** Pins `product` at `place` in the campaign's content (replacing its own pin and any
   * other pin of that place), in the draft. */
  pin(campaignId, product, place) {
    this.change(campaignId, (content) => {
      content.pins = (content.pins || []).filter((p) => p.product !== product && p.place !== place);
      content.pins.push({ product, place });
      content.pins.sort((a, b) => a.place - b.place);
    });
    $("cz-message").textContent = product + " pinned at place " + place + " in " + campaignId + " (draft).";
  },

  /** Hides `product` from the campaign: a `productNotIn` filter holds it (and its pin
   * goes), in the draft. */
  hide(campaignId, product) {
    this.change(campaignId, (content) => {
      content.pins = (content.pins || []).filter((p) => p.product !== product);
      if (!content.pins.length) delete content.pins;
      content.filters = content.filters || [];
      let filter = content.filters.find((f) => f.productNotIn);
      if (!filter) {
        filter = { productNotIn: [] };
        content.filters.push(filter);
      }
      if (!filter.productNotIn.includes(product)) filter.productNotIn.push(product);
    });
    $("cz-message").textContent = product + " hidden from " + campaignId + " (draft).";
  },

  change(campaignId, edit) {
    const campaign = this.campaign(campaignId);
    if (!campaign) return;
    const content = JSON.parse(JSON.stringify(campaign.content));
    edit(content);
    campaign.content = content;
    campaigns.render();
    campaigns.preview();
  },
};

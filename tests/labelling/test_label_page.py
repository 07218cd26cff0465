"""The labelling page as HTML: what it shows, its partial swaps, its shortcuts, and its static files."""

from __future__ import annotations

import re

from django.urls import reverse

from labelstudio_lite.labelling.models import Item, Label
from tests.factories import label_items

from .pages import open_label_page, send_answer, take_items


def test_the_labelling_page_loads_htmx_and_label_js_from_our_static_files_not_a_cdn(
    solo_campaign, annotator_client, client
):
    body = open_label_page(annotator_client, solo_campaign.name).content.decode()

    scripts = re.findall(r'<script[^>]*\bsrc="([^"]+)"', body)
    styles = re.findall(r'<link[^>]*\bhref="([^"]+)"', body)
    assert any(re.fullmatch(r"/static/vendor/htmx-2\.0\.\d+\.min\.js", s) for s in scripts), scripts
    assert "/static/js/label.js" in scripts
    for url in scripts + styles:
        assert url.startswith("/static/"), f"{url} is not one of our static files"
    assert "//" not in "".join(scripts + styles)
    for url in scripts + styles:
        response = client.get(url)
        assert response.status_code == 200, url
    htmx = b"".join(client.get(next(s for s in scripts if "htmx" in s)).streaming_content)
    assert b"htmx" in htmx and len(htmx) > 10_000


def test_the_page_shows_the_question_the_context_chunks_the_answer_and_the_shortcuts(solo_campaign, annotator_client):
    body = open_label_page(annotator_client, solo_campaign.name).content.decode()

    item = Item.objects.get(campaign=solo_campaign, leases__status="active")
    qid = item.row.question.qid
    assert f"Question: What is the refund window of plan {qid}" in body
    assert body.count('class="chunk"') == 2
    assert f"doc-{qid}-a" in body and f"First chunk for {qid}" in body and f"Second chunk for {qid}" in body
    assert f"Claim 1 of {qid} says the window is 10 days." in body
    assert "Is the answer supported by the context?" in body
    for key, label in (
        ("S", "Supported"),
        ("U", "Unsupported"),
        ("C", "Can't tell"),
        ("K", "Skip"),
        ("Z", "Undo"),
        ("B", "Your labels"),
    ):
        assert re.search(rf'aria-keyshortcuts="{key}"[^>]*><kbd>{key}</kbd> {label}', body), key
    assert 'id="shortcuts"' in body and "<kbd>?</kbd>" in body  # the shortcut list
    assert 'role="progressbar"' in body
    assert 'your share: <span id="share-done">0</span> / <span id="share-target">12</span> done' in body
    assert '<textarea name="rationale"' in body


def test_a_claim_is_highlighted_in_the_answer_and_can_be_searched_in_the_context(
    small_run, make_campaign, annotator, annotator_client
):
    campaign = make_campaign(run=small_run, name="claims", unit="claim", annotators=[annotator])

    body = open_label_page(annotator_client, campaign.name).content.decode()

    item = Item.objects.get(campaign=campaign, leases__status="active")
    claim = item.row.claims[item.claim_index]["text"]
    assert f'<mark class="claim">{claim}</mark>' in body
    assert f"Claim {item.claim_index + 1} of 2" in body
    assert 'id="find-in-context"' in body and 'id="find-claim"' in body
    assert "Is this claim supported by the context?" in body


def test_an_answer_from_the_page_script_returns_json_and_a_plain_post_the_whole_page_with_the_next_item(
    solo_campaign, annotator, annotator_client
):
    url = reverse("labelling:answer", args=[solo_campaign.name])
    items = take_items(annotator_client, solo_campaign.name)["items"]
    first, second = items[0]["id"], items[1]["id"]

    reply = send_answer(
        annotator_client,
        solo_campaign.name,
        item_id=first,
        value="supported",
        have=",".join(str(i["id"]) for i in items[1:]),
    )
    plain = annotator_client.post(url, {"item_id": second, "value": "unsupported"})

    assert reply["result"] == {
        "outcome": "saved",
        "item_id": first,
        "label_id": Label.objects.get(item_id=first).pk,
        "value": "supported",
        "message": "Saved: supported.",
    }
    assert reply["share"]["done"] == 1
    held = [item["id"] for item in reply["items"]]
    assert held[:2] == [items[1]["id"], items[2]["id"]] and len(held) == 3  # the queue refilled
    assert [("html" in item) for item in reply["items"]] == [False, False, True]  # the page has the first two
    assert '<article class="label-item"' in reply["items"][2]["html"] and "<html" not in reply["items"][2]["html"]
    body = plain.content.decode()
    assert plain.status_code == 200 and "<html" in body and "Saved: unsupported." in body
    assert re.search(r'name="item_id" value="(\d+)"', body).group(1) not in (str(first), str(second))


def test_an_unreadable_answer_says_what_went_wrong(solo_campaign, annotator_client):
    url = reverse("labelling:answer", args=[solo_campaign.name])
    body = annotator_client.post(url, {"item_id": "x", "value": "probably"}).content.decode()
    reply = send_answer(annotator_client, solo_campaign.name, item_id="x", value="probably")
    assert "That answer could not be read" in body and 'role="alert"' in body
    assert reply["result"]["outcome"] == "invalid" and "item_id" in reply["result"]["message"]


def test_a_finished_share_says_so_and_offers_nothing_more(solo_campaign, annotator, annotator_client):
    label_items(campaign=solo_campaign, user=annotator)

    body = open_label_page(annotator_client, solo_campaign.name).content.decode()
    mine = annotator_client.get(reverse("labelling:mine")).content.decode()

    assert "You're done." in body and "you gave 12 labels" in body
    assert 'id="answer-form"' not in body
    assert "12 of your 12 done" in mine and "finished" in mine


def test_label_js_binds_the_documented_keys_and_ignores_them_while_typing(client):
    js = "".join(
        b"".join(client.get(f"/static/js/{name}.js").streaming_content).decode()
        for name in ("label", "label-keys", "label-tools")
    )

    assert re.search(r"s:\s*\"supported\"", js) and re.search(r"u:\s*\"unsupported\"", js)
    assert re.search(r"c:\s*\"cant_tell\"", js) and re.search(r"k:\s*\"skip\"", js)
    assert not re.search(r"\"\?\":\s*\"cant_tell\"", js)  # ? opens the shortcut list
    assert 'key === "z"' in js and 'key === "?"' in js
    assert '"b"' in js and "back-link" in js
    assert '"TEXTAREA"' in js and "typing(event.target)" in js
    assert "event.repeat" in js and "guardMs" in js

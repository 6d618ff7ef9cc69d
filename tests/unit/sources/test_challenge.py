"""CAPTCHA / login-wall / consent-wall detection on pages written here, and the look-alikes it must leave alone."""

from __future__ import annotations

import pytest

from lyra.sources.web.challenge import SHORT_TEXT, detect_challenge, page_signals

ARTICLE_TEXT = " ".join(
    [
        "In a randomised trial of 412 adults, a Mediterranean diet lowered systolic blood pressure by 6 mmHg over",
        "twelve months compared with a low-fat diet. The effect held after adjusting for weight change, and it was",
        "larger in participants who were hypertensive at baseline. Adherence was measured with a validated food",
        "frequency questionnaire at three, six and twelve months, and drop-out was below eight percent in both arms.",
        "The authors note that sodium intake fell in both groups, which may explain part of the benefit seen in the",
        "control arm, and they call for longer trials with hard cardiovascular outcomes.",
    ]
)
assert len(ARTICLE_TEXT) > SHORT_TEXT


def page(body: str, title: str = "Page", head: str = "") -> str:
    return f"<!doctype html><html><head><title>{title}</title>{head}</head><body>{body}</body></html>"


# ----------------------------------------------------------------------------- walls
RECAPTCHA = page(
    '<div class="box"><h1>One more step</h1><p>Please complete the security check to access example.org.</p>'
    '<form action="/verify" method="post"><div class="g-recaptcha" data-sitekey="6LcX"></div>'
    '<button type="submit">Continue</button></form></div>',
    head='<script src="https://www.google.com/recaptcha/api.js" async defer></script>',
)
HCAPTCHA = page(
    "<main><p>Verify you are human by completing the action below.</p>"
    '<div class="h-captcha" data-sitekey="10000000-ffff-ffff-ffff-000000000001"></div></main>',
    head='<script src="https://js.hcaptcha.com/1/api.js"></script>',
)
TURNSTILE = page(
    '<div class="main-wrapper"><h1 class="zone-name-title">journal.example</h1>'
    "<h2>Checking if the site connection is secure</h2>"
    '<div class="cf-turnstile" data-sitekey="0x4AAAAAAA"></div>'
    "<p>journal.example needs to review the security of your connection before proceeding.</p></div>"
    "<script>window._cf_chl_opt={cvId: '3', cZone: 'journal.example'};</script>",
    title="Just a moment...",
)
CLOUDFLARE_JS = page(
    "<noscript>Enable JavaScript and cookies to continue</noscript>"
    "<div id='challenge-body-text'>Checking your browser before accessing journal.example.</div>"
    '<script src="/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1?ray=8a1"></script>',
    title="Just a moment...",
)
UNUSUAL_TRAFFIC = page(
    "<div><b>About this page</b><br><br>Our systems have detected unusual traffic from your computer network. "
    "This page checks to see if it's really you sending the requests, and not a robot.</div>",
    title="https://www.google.com/search?q=x",
)
LOGIN_PAGE = page(
    '<div class="login"><h1>Sign in</h1><form action="/session" method="post">'
    '<label>E-mail <input type="email" name="email"></label>'
    '<label>Password <input type="password" name="password"></label>'
    '<button>Sign in</button></form><p><a href="/forgot">Forgot your password?</a></p></div>',
    title="Sign in | Journal",
)
SIGN_IN_TO_CONTINUE = page(
    "<main><h1>Members only</h1><p>Sign in to continue reading this article.</p>"
    '<a class="button" href="/login?next=/article/9">Sign in</a></main>'
)
FORBIDDEN_LOGIN = page(
    '<h1>Access denied</h1><form action="/login"><input name="user"><input name="code" type="text">'
    "<button>Log in</button></form><p>Please log in with your institution.</p>",
    title="Log in",
)
CONSENT_PAGE = page(
    '<div id="onetrust-consent-sdk"><div id="onetrust-banner-sdk"><h2>We value your privacy</h2>'
    "<p>We and our 812 partners use cookies and similar technologies to store and access information on your "
    "device, for personalised ads and content, ad and content measurement, audience research and services "
    "development. With your permission we and our partners may use precise geolocation data.</p>"
    "<button>Accept all</button><button>Reject all</button><button>Manage preferences</button></div></div>",
    title="Before you continue",
)
CONSENT_PLAIN = page(
    "<div class='wall'><h1>Before you continue</h1><p>We use cookies and data to deliver and maintain services, "
    "measure audience engagement and show personalised content.</p><form action='/save'>"
    "<button>Accept all</button><button>Reject all</button></form></div>"
)


@pytest.mark.parametrize(
    ("html", "status", "kind", "said"),
    [
        (RECAPTCHA, 200, "captcha", "g-recaptcha"),
        (HCAPTCHA, 200, "captcha", "h-captcha"),
        (TURNSTILE, 403, "captcha", "cf-turnstile"),
        (CLOUDFLARE_JS, 503, "captcha", "/cdn-cgi/challenge-platform"),
        (UNUSUAL_TRAFFIC, 429, "captcha", "unusual traffic"),
        (LOGIN_PAGE, 200, "login_wall", "password field"),
        (SIGN_IN_TO_CONTINUE, 200, "login_wall", "sign in to continue"),
        (FORBIDDEN_LOGIN, 403, "login_wall", "HTTP 403 with a login form"),
        (CONSENT_PAGE, 200, "consent_wall", "onetrust"),
        (CONSENT_PLAIN, 200, "consent_wall", "consent notice"),
    ],
    ids=[
        "recaptcha",
        "hcaptcha",
        "turnstile",
        "cloudflare-js-challenge",
        "unusual-traffic",
        "login-form",
        "sign-in-to-continue",
        "403-login-form",
        "onetrust-consent",
        "plain-consent",
    ],
)
def test_a_wall_is_detected_with_its_kind_and_a_reason(html: str, status: int, kind: str, said: str) -> None:
    found = detect_challenge(status, {"content-type": "text/html"}, html, "https://journal.example/article/9")
    assert found is not None and found.kind == kind
    assert said in found.reason


def test_cloudflares_own_header_marks_a_challenge_whatever_the_body() -> None:
    found = detect_challenge(403, {"Content-Type": "text/html", "cf-mitigated": "challenge"}, "<html></html>")
    assert found is not None and found.kind == "captcha" and "cf-mitigated" in found.reason


def test_http_401_asking_for_credentials_is_a_login_wall() -> None:
    found = detect_challenge(401, {"www-authenticate": 'Basic realm="intranet"'}, "")
    assert found is not None and found.kind == "login_wall" and "Basic" in found.reason


def test_a_consent_host_with_little_text_is_a_consent_wall() -> None:
    html = page("<p>Choose your options.</p>")
    found = detect_challenge(200, {}, html, "https://consent.news.example/?continue=https://news.example/x")
    assert found is not None and found.kind == "consent_wall"


# ----------------------------------------------------------------------------- look-alikes
ARTICLE_ABOUT_CAPTCHAS = page(
    "<article><h1>Why CAPTCHAs fail</h1><p>Sites ask visitors to verify you are human with a reCAPTCHA or an "
    "hCaptcha, and Cloudflare shows 'Checking your browser' pages. Are you a robot? Researchers found that bots "
    f"solve image CAPTCHAs faster than people.</p><p>{ARTICLE_TEXT}</p></article>"
)
ARTICLE_WITH_PROTECTED_COMMENTS = page(
    f"<article><h1>Diet and blood pressure</h1><p>{ARTICLE_TEXT}</p></article>"
    '<section id="comments"><form action="/comment"><textarea name="c"></textarea>'
    '<div class="g-recaptcha" data-sitekey="6LcX"></div><button>Post</button></form></section>',
    head='<script src="https://www.google.com/recaptcha/api.js"></script>',
)
ARTICLE_WITH_HEADER_LOGIN = page(
    '<header><a href="/">Journal</a><form action="/login" class="mini-login"><input name="u">'
    '<input type="password" name="p"><button>Sign in</button></form><a href="/login">Log in</a></header>'
    f"<article><h1>Diet and blood pressure</h1><p>{ARTICLE_TEXT}</p></article>"
)
ARTICLE_WITH_COOKIE_BANNER = page(
    f"<article><h1>Diet and blood pressure</h1><p>{ARTICLE_TEXT}</p></article>"
    '<div id="cookie-banner" class="cookie-consent"><p>We use cookies to improve this site.</p>'
    "<button>Accept all</button><button>Reject all</button></div>"
)
SHORT_NOTE = page("<main><h1>Erratum</h1><p>Table 2 of the 2021 article listed the wrong unit (mg, not g).</p></main>")
ARTICLE_ABOUT_LOGIN = page(
    "<article><h1>Paywalls in science</h1><p>Readers are often told to sign in to continue or please log in "
    f"through their library.</p><p>{ARTICLE_TEXT}</p></article>"
)


@pytest.mark.parametrize(
    ("html", "status"),
    [
        (ARTICLE_ABOUT_CAPTCHAS, 200),
        (ARTICLE_WITH_PROTECTED_COMMENTS, 200),
        (ARTICLE_WITH_HEADER_LOGIN, 200),
        (ARTICLE_WITH_COOKIE_BANNER, 200),
        (SHORT_NOTE, 200),
        (ARTICLE_ABOUT_LOGIN, 200),
        (ARTICLE_ABOUT_CAPTCHAS, 403),
        (page("<h1>Not found</h1><p>No such page.</p>"), 404),
    ],
    ids=[
        "article-about-captchas",
        "article-with-recaptcha-comments",
        "article-with-header-login",
        "article-with-cookie-banner",
        "short-note",
        "article-about-login",
        "403-article",
        "plain-404",
    ],
)
def test_an_ordinary_page_is_not_flagged(html: str, status: int) -> None:
    assert detect_challenge(status, {"content-type": "text/html"}, html, "https://journal.example/a") is None


def test_the_signals_count_only_text_outside_forms_layout_and_the_consent_notice() -> None:
    signals = page_signals(ARTICLE_WITH_HEADER_LOGIN)
    assert signals is not None
    assert signals.password_fields == 1 and signals.forms == 1
    assert signals.text_chars >= len(ARTICLE_TEXT) and "sign in" in signals.all_text
    consent = page_signals(CONSENT_PAGE)
    assert consent is not None and consent.text_chars < 50 and consent.consent_text_chars > 200


def test_unparseable_or_empty_html_is_not_a_wall() -> None:
    assert detect_challenge(200, {}, "") is None
    assert detect_challenge(200, {}, "\x00\x00") is None

"""The dashboard's toolkit, used by every page instead of a copy of its own.

`pages`: the pager (a queryset or list sliced into a `Page`), the one page/limit parser with
its clamp, the owner guard and the not-found page. `templatetags` (`{% load atlaso %}`): time,
percent, the polarity bar, the pager and flash partials. `navigation`: the frame's links and
its context processor. `charts`: server-drawn SVG charts. `admin`: pieces every app's admin
uses. It imports no app.
"""

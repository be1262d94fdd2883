from django.contrib import admin
from django.urls import path

from atlaso_site.api import api
from atlaso_site.views import home

urlpatterns = [
    path("", home, name="home"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
]

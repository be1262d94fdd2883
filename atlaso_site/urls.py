from django.contrib import admin
from django.urls import path

from atlaso_site.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
]

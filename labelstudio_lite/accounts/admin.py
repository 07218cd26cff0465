from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from .models import User


@admin.register(User)
class RoleUserAdmin(UserAdmin):
    list_display = ("username", "email", "role", "is_active", "is_superuser")
    list_filter = ("role", "is_active", "is_superuser")
    fieldsets = (*UserAdmin.fieldsets, ("Role", {"fields": ("role",)}))
    add_fieldsets = (*UserAdmin.add_fieldsets, ("Role", {"fields": ("role",)}))

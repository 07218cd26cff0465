"""Admin: eval set versions and questions are read only (frozen); runs and gate decisions are records."""

from django.contrib import admin

from .models import Comparison, EvalSet, EvalSetVersion, GateDecisionRecord, Job, JudgeConfig, Question, Run


class ReadOnlyAdmin(admin.ModelAdmin):
    """Everything visible, nothing editable or deletable."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(EvalSet)
class EvalSetAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    fields = ("name", "description")

    def has_delete_permission(self, request, obj=None):
        return False

    def get_readonly_fields(self, request, obj=None):
        return ("name",) if obj else ()


@admin.register(EvalSetVersion)
class EvalSetVersionAdmin(ReadOnlyAdmin):
    list_display = ("eval_set", "number", "question_count", "content_hash", "created_at")
    list_filter = ("eval_set",)


@admin.register(Question)
class QuestionAdmin(ReadOnlyAdmin):
    list_display = ("qid", "version", "qtype", "answerable")
    list_filter = ("version__eval_set", "qtype")
    search_fields = ("qid", "text")


@admin.register(JudgeConfig)
class JudgeConfigAdmin(ReadOnlyAdmin):
    list_display = ("model", "model_version", "prompt_hash", "temperature", "created_at")


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ("name", "version", "row_count", "question_count", "k", "created_at")
    list_filter = ("version__eval_set",)


@admin.register(Comparison)
class ComparisonAdmin(ReadOnlyAdmin):
    list_display = ("base", "candidate", "overall", "created_at")


@admin.register(GateDecisionRecord)
class GateDecisionAdmin(ReadOnlyAdmin):
    list_display = ("comparison", "metric", "slice", "status", "mean", "low", "high")


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = ("kind", "status", "done", "total", "created_by", "created_at")

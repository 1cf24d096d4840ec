from django.core import mail
from django.core.mail import send_mail


def test_outgoing_mail_is_captured_in_tests(settings):
    send_mail("subject", "body", None, ["a@example.com"])
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["a@example.com"]

"""An aiosmtpd handler for the email tests: aiosmtpd's Maildir handler, except that it refuses
(451, try again later) the first time each recipient whose address starts with "flaky" is
offered, as a server that is briefly unable to take one recipient's mail does.

Run as `python -m aiosmtpd -n -l HOST:PORT -c flaky_mailbox.FlakyMailbox MAILDIR` with this
directory on PYTHONPATH.
"""

from aiosmtpd.handlers import Mailbox


class FlakyMailbox(Mailbox):
    def __init__(self, mail_dir, message_class=None):
        super().__init__(mail_dir, message_class)
        self.refused = set()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.startswith("flaky") and address not in self.refused:
            self.refused.add(address)
            return "451 4.3.0 try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

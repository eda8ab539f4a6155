import type { Transporter } from 'nodemailer';

/** Outgoing mail (invites, resets). Only when SMTP_URL is set; without it the links are printed or shown instead. */
export interface Mailer {
  send(message: { to: string; subject: string; text: string }): Promise<void>;
}

/** nodemailer is loaded on the first message, so a service without SMTP_URL never pays for it at start. */
export function smtpMailer(url: string, from: string): Mailer {
  let transport: Promise<Transporter> | undefined;
  return {
    async send({ to, subject, text }) {
      transport ??= import('nodemailer').then((m) => m.default.createTransport(url));
      await (await transport).sendMail({ from, to, subject, text });
    },
  };
}

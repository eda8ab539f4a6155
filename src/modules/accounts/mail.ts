import nodemailer from 'nodemailer';

/** Outgoing mail (invites, resets). Only when SMTP_URL is set; without it the links are printed or shown instead. */
export interface Mailer {
  send(message: { to: string; subject: string; text: string }): Promise<void>;
}

export function smtpMailer(url: string, from: string): Mailer {
  const transport = nodemailer.createTransport(url);
  return {
    async send({ to, subject, text }) {
      await transport.sendMail({ from, to, subject, text });
    },
  };
}

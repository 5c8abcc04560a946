const answers = await Promise.all([1, 2, 3, 4].map(() => tools.rendezvous({ n: 4 })));
return answers.every((count) => count >= 4);

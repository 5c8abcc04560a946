throw { code: 7 };
